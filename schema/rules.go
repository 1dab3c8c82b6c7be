package schema

import (
	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"
)

// unitRules adds to a unit file's schema the rules between keys that the
// loader checks after decoding them (checkUnit, and the ready: and
// provider: blocks' own).
func unitRules(s *jsonschema.Schema) {
	one := uint64(1)
	if ready, ok := s.Properties.Get("ready"); ok { // at most one probe
		ready.MaxProperties = &one
	}
	if provider, ok := s.Properties.Get("provider"); ok { // the endpoint this unit serves
		provider.Required = []string{"id", "base_url"}
	}
	s.OneOf = []*jsonschema.Schema{{Required: []string{"command"}}, {Required: []string{"shell"}}}
	s.AllOf = []*jsonschema.Schema{
		{ // every survivor has a written reason
			If:   &jsonschema.Schema{Required: []string{"ownership"}, Properties: props("ownership", &jsonschema.Schema{Enum: []any{"adoptable", "persist_on_release"}})},
			Then: &jsonschema.Schema{Required: []string{"reason"}, Properties: props("reason", &jsonschema.Schema{Pattern: `\S`})},
		},
		{ // a job is not restarted on success
			If:   &jsonschema.Schema{Required: []string{"schedule"}},
			Then: &jsonschema.Schema{Properties: props("restart", &jsonschema.Schema{Not: &jsonschema.Schema{Const: "always"}})},
		},
		{ // pid_file is a forking unit's
			If:   &jsonschema.Schema{Required: []string{"pid_file"}},
			Then: &jsonschema.Schema{Required: []string{"type"}, Properties: props("type", &jsonschema.Schema{Const: "forking"})},
		},
		{ // remain_after_exit is a oneshot's
			If:   &jsonschema.Schema{Required: []string{"remain_after_exit"}},
			Then: &jsonschema.Schema{Required: []string{"type"}, Properties: props("type", &jsonschema.Schema{Const: "oneshot"})},
		},
		{ // one way to reload
			If:   &jsonschema.Schema{Required: []string{"reload_signal"}},
			Then: &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"reload"}}},
		},
		{ // a oneshot is done when it exits 0: no probe, never restarted on success
			If: &jsonschema.Schema{Required: []string{"type"}, Properties: props("type", &jsonschema.Schema{Const: "oneshot"})},
			Then: &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"ready"}},
				Properties: props("restart", &jsonschema.Schema{Not: &jsonschema.Schema{Const: "always"}})},
		},
	}
	s.DependentRequired = map[string][]string{
		"run_budget_seconds": {"schedule"},
		"wrapup_signal":      {"run_budget_seconds"},
	}
}

// props is an ordered properties map of name, schema pairs.
func props(kv ...any) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := jsonschema.NewProperties()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i].(string), kv[i+1].(*jsonschema.Schema))
	}
	return p
}
