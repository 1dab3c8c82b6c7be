package schema

import (
	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"
)

// The value types below exist for their JSONSchema methods: each says
// which spellings the units decoder accepts for that kind of value.

const durationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

func props(kv ...any) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := jsonschema.NewProperties()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i].(string), kv[i+1].(*jsonschema.Schema))
	}
	return p
}

// Duration is a Go duration string: "90s", "1m30s".
type Duration string

func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: `A duration with a unit, like "90s" or "1m30s".`}
}

// DurationOrSeconds is a duration string or whole seconds.
type DurationOrSeconds string

func (DurationOrSeconds) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Description: "Whole seconds."},
		{Type: "string", Pattern: durationPattern, Description: `A duration, like "90s".`},
	}}
}

// Seconds is a whole number of seconds, above zero.
type Seconds int

func (Seconds) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: "1", Description: "Whole seconds, above zero."}
}

// Size is bytes or a number with a unit.
type Size string

func (Size) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Description: "Bytes."},
		{Type: "string", Pattern: `^[0-9]+\s*([KMGT]i?B|[kKMGT]|kB|B)?$`, Description: `A size like "10MiB" or "512KB".`},
	}}
}

// Signal is a signal name or number.
type Signal string

func (Signal) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Maximum: "64"},
		{Type: "string", Pattern: `^(([Ss][Ii][Gg])?[A-Za-z][A-Za-z0-9]*|[0-9]+)$`, Description: `A signal like "TERM", "SIGINT" or "15".`},
	}}
}

// Port is a TCP port.
type Port int

func (Port) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: "1", Maximum: "65535"}
}

// UnitName is the name of another unit: its file name without .yaml.
type UnitName string

func (UnitName) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^[A-Za-z0-9][A-Za-z0-9._@-]*$`}
}

// Schedule is a 5-field cron expression.
type Schedule string

func (Schedule) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^\s*\S+(\s+\S+){4}\s*$`,
		Description: `5-field cron (minute hour day-of-month month day-of-week), like "*/15 * * * *". Makes the unit a job.`}
}

// Arg is one argv item: text, or a number or boolean taken as written.
type Arg string

func (Arg) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}}}
}

// Scalar is an env value: text, a number or boolean taken as written, or
// empty.
type Scalar string

func (Scalar) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "null"}}}
}

// Principal is a user or group: a name of the passwd or group database,
// or a number.
type Principal string

func (Principal) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Description: "A uid or gid."},
		{Type: "string", Pattern: `^[^:\s/]+$`, Description: "A name or number."},
	}}
}

// Umask is an octal file mode creation mask.
type Umask string

func (Umask) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Maximum: "777", Description: "Octal digits, as written: 27 is 027."},
		{Type: "string", Pattern: `^(0o)?0*[0-7]{1,3}$`, Description: `An octal mask like "0027".`},
	}, Description: "File mode creation mask (octal, as systemd's UMask=). Default: hermesd's."}
}

// Rlimit is one resource limit: a number or infinity for both the soft
// and the hard limit, or soft:hard.
type Rlimit string

func (Rlimit) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "0", Description: "Soft and hard limit."},
		{Type: "string", Pattern: `^\s*([0-9]+|infinity|unlimited)\s*(:\s*([0-9]+|infinity|unlimited)\s*)?$`, Description: `"infinity", or "soft:hard" like "1024:65536".`},
	}}
}

// Percent is a percentage: "150%" or 150.
type Percent string

func (Percent) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Maximum: "100000"},
		{Type: "string", Pattern: `^\s*[0-9]+%?$`, Description: `A percentage like "50%".`},
	}}
}

// EnvFiles is one env file path or a list of them, "-" before an optional
// one.
type EnvFiles []string

func (EnvFiles) JSONSchema() *jsonschema.Schema {
	path := &jsonschema.Schema{Type: "string", Pattern: `^-?\s*\S`}
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{path, {Type: "array", Items: path}}}
}
