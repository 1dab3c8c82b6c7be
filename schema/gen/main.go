// Command gen writes the JSON Schemas of the schema package into the
// current directory, and the key reference they give into ../docs; run it with `go generate ./schema` from the module
// root.
package main

import (
	"fmt"
	"os"

	"github.com/hermes-units/hermes/schema"
)

func main() {
	files, err := schema.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, name := range schema.Files {
		if err := os.WriteFile(name, files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "schema:", err)
			os.Exit(1)
		}
	}
	ref, err := schema.Reference(files)
	if err == nil {
		err = os.WriteFile(schema.ReferenceFile, ref, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		os.Exit(1)
	}
}
