// Command gen writes the JSON Schemas of the schema package into the
// current directory; run it with `go generate ./schema` from the module
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
}
