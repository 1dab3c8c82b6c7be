// Package schema holds the JSON Schemas of unit files (unit.schema.json)
// and of hermes.yaml (config.schema.json), and the key reference
// (docs/reference.md), generated from the units decoder's own key tables
// (units.UnitKeys, units.ConfigKeys): a key, what it takes and what it
// means are written once, beside its decoder. This package adds the JSON
// Schema of each kind of value (values.go) and the rules that join keys
// (rules.go), which the loader checks too. A test checks that the
// checked-in files match the generator: after changing a key, run
// `go generate ./schema` (make schema).
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"

	"github.com/hermes-units/hermes/units"
)

//go:generate go run ./gen

// Files are the schema files this package generates, relative to its
// directory.
var Files = []string{"unit.schema.json", "config.schema.json"}

// Generate renders every schema file: file name -> content. The output is
// deterministic, so that a test can compare it with the checked-in files.
func Generate() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range []struct {
		name  string
		keys  []units.Key
		rules func(*jsonschema.Schema)
		title string
		desc  string
	}{
		{"unit.schema.json", units.UnitKeys(), unitRules, "hermes unit", "One unit file of the hermes units directory (NAME.yaml): what to run, how it is owned, restarted, probed and stopped."},
		{"config.schema.json", units.ConfigKeys(), nil, "hermes.yaml", "The main configuration of hermesd and hermesctl: paths, agent timeouts, providers, gateway, unit defaults."},
	} {
		b := &builder{defs: jsonschema.Definitions{}}
		s := b.object(f.keys)
		if b.err != nil {
			return nil, fmt.Errorf("schema: %s: %w", f.name, b.err)
		}
		s.Version, s.Definitions, s.Title, s.Description = jsonschema.Version, b.defs, f.title, f.desc
		if f.rules != nil {
			f.rules(s)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // keep "<state>" readable in descriptions
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			return nil, fmt.Errorf("schema: rendering %s: %w", f.name, err)
		}
		out[f.name] = buf.Bytes()
	}
	return out, nil
}
