package schema

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
)

// Files are the schema files this package generates, relative to its
// directory.
var Files = []string{"unit.schema.json", "config.schema.json"}

// Generate renders every schema file: file name -> content. The output is
// deterministic, so that a test can compare it with the checked-in files.
func Generate() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range []struct {
		name  string
		v     any
		title string
		desc  string
	}{
		{"unit.schema.json", &UnitFile{}, "hermes unit", "One unit file of the hermes units directory (NAME.yaml): what to run, how it is owned, restarted, probed and stopped."},
		{"config.schema.json", &ConfigFile{}, "hermes.yaml", "The main configuration of hermesd and hermesctl: paths, agent timeouts, providers, gateway, unit defaults."},
	} {
		r := &jsonschema.Reflector{
			Anonymous:                  true,
			ExpandedStruct:             true,
			RequiredFromJSONSchemaTags: true,
		}
		s := r.Reflect(f.v)
		s.Title = f.title
		s.Description = f.desc
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // keep "<state>" readable in descriptions
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			return nil, fmt.Errorf("schema: rendering %s: %w", f.name, err)
		}
		out[f.name] = b.Bytes()
	}
	return out, nil
}
