package schema

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/invopop/jsonschema"

	"github.com/hermes-units/hermes/units"
)

const durationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

// valueTypes are the JSON Schemas of the values several keys take: the
// spellings the units decoder accepts for each. A schema file defines
// those it uses under $defs, by these names; a units.Kind named as one
// (units.KindDuration is "Duration") is that type.
var valueTypes = map[string]*jsonschema.Schema{
	"Duration": {Type: "string", Pattern: durationPattern, Description: `A duration with a unit, like "90s" or "1m30s".`},
	"DurationOrSeconds": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Description: "Whole seconds."},
		{Type: "string", Pattern: durationPattern, Description: `A duration, like "90s".`},
	}},
	"Seconds": {Type: "integer", Minimum: "1", Description: "Whole seconds, above zero."},
	"Size": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Description: "Bytes."},
		{Type: "string", Pattern: `^[0-9]+\s*([KMGT]i?B|[kKMGT]|kB|B)?$`, Description: `A size like "10MiB" or "512KB".`},
	}},
	"Signal": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Maximum: "64"},
		{Type: "string", Pattern: `^(([Ss][Ii][Gg])?[A-Za-z][A-Za-z0-9]*|[0-9]+)$`, Description: `A signal like "TERM", "SIGINT" or "15".`},
	}},
	"Port":     {Type: "integer", Minimum: "1", Maximum: "65535"},
	"UnitName": {Type: "string", Pattern: `^[A-Za-z0-9][A-Za-z0-9._@-]*$`},
	"Schedule": {Type: "string", Pattern: `^\s*\S+(\s+\S+){4}\s*$`,
		Description: `5-field cron (minute hour day-of-month month day-of-week), like "*/15 * * * *". Makes the unit a job.`},
	// Arg is one argv item, Scalar an env value: text, or a number or
	// boolean taken as written; an env value may be empty.
	"Arg":    {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}}},
	"Scalar": {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "null"}}},
	"Principal": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Description: "A uid or gid."},
		{Type: "string", Pattern: `^[^:\s/]+$`, Description: "A name or number."},
	}},
	"Umask": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Maximum: "777", Description: "Octal digits, as written: 27 is 027."},
		{Type: "string", Pattern: `^(0o)?0*[0-7]{1,3}$`, Description: `An octal mask like "0027".`},
	}, Description: "File mode creation mask (octal, as systemd's UMask=). Default: hermesd's."},
	"Rlimit": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Description: "Soft and hard limit."},
		{Type: "string", Pattern: `^\s*([0-9]+|infinity|unlimited)\s*(:\s*([0-9]+|infinity|unlimited)\s*)?$`, Description: `"infinity", or "soft:hard" like "1024:65536".`},
	}},
	"Percent": {OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Maximum: "100000"},
		{Type: "string", Pattern: `^\s*[0-9]+%?$`, Description: `A percentage like "50%".`},
	}},
	"EnvFiles": {OneOf: []*jsonschema.Schema{envFile, {Type: "array", Items: envFile}}},
}

// envFile is one env_file entry: a path, "-" before an optional one.
var envFile = &jsonschema.Schema{Type: "string", Pattern: `^-?\s*\S`}

// builder turns the decoder's keys into JSON Schemas, defining each value
// type it uses once (defs). err is the first kind it does not know.
type builder struct {
	defs jsonschema.Definitions
	err  error
}

// object is a mapping of keys, and no other.
func (b *builder) object(keys []units.Key) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	for _, k := range keys {
		props.Set(k.Name, b.value(k.Value))
	}
	return &jsonschema.Schema{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema}
}

// ref refers to the value type name, defining it.
func (b *builder) ref(name string) *jsonschema.Schema {
	t, ok := valueTypes[name]
	if !ok && b.err == nil {
		b.err = fmt.Errorf("the decoder reads values of kind %q, which has no schema here (values.go)", name)
	}
	b.defs[name] = t
	return &jsonschema.Schema{Ref: "#/$defs/" + name}
}

// list is a list of the value type item.
func (b *builder) list(item string, unique bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: b.ref(item), UniqueItems: unique}
}

// plain are the schemas of the kinds written in place, by kind.
var plain = map[units.Kind]jsonschema.Schema{
	units.KindText:     {Type: "string"},
	units.KindNonEmpty: {Type: "string", MinLength: &one},
	units.KindBool:     {Type: "boolean"},
	units.KindHostPort: {Type: "string", Pattern: `^.+:[0-9]+$`},
	units.KindListen:   {Type: "string", Pattern: `^.*:[0-9]+$`},
	units.KindURL:      {Type: "string", Pattern: `^https?://[^/]+`},
	units.KindEnvName:  {Type: "string", Pattern: `^[^=$ ]+$`},
	units.KindOrigins:  {Type: "array", Items: &jsonschema.Schema{Type: "string"}, UniqueItems: true},
}

var one = uint64(1)

// value is the schema of what a key takes.
func (b *builder) value(v units.Value) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	switch v.Kind {
	case units.KindInt:
		s = &jsonschema.Schema{Type: "integer", Minimum: number(v.Min), Maximum: number(v.Max)}
	case units.KindWord:
		s.Type = "string"
		for _, w := range v.Words {
			s.Enum = append(s.Enum, w)
		}
	case units.KindArgs:
		s = b.list("Arg", false)
		s.MinItems = &one
	case units.KindDeps:
		s = b.list("UnitName", true)
	case units.KindPorts:
		s = b.list("Port", true)
	case units.KindGroups:
		s = b.list("Principal", true)
	case units.KindEnv:
		s = &jsonschema.Schema{Type: "object", AdditionalProperties: b.ref("Scalar")}
	case units.KindBlock:
		s = b.object(v.Keys)
	case units.KindByID:
		s = &jsonschema.Schema{Type: "object", AdditionalProperties: b.object(v.Keys)}
	case units.KindItems:
		item := b.object(v.Keys)
		for _, k := range v.Keys {
			item.Required = append(item.Required, k.Name)
		}
		s = &jsonschema.Schema{Type: "array", Items: item}
	default:
		if p, ok := plain[v.Kind]; ok {
			*s = p
		} else {
			s = b.ref(string(v.Kind))
		}
	}
	s.Description, s.Default = v.Doc, v.Default
	return s
}

func number(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }
