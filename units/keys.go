package units

import "github.com/hermes-units/hermes/internal/word"

// Key is one key of a unit file or hermes.yaml: its name and what it
// takes. The decoder's tables (keyed) hold one for each key beside its
// decoder, so that a key is accepted, read and described in one place;
// the schema package writes the JSON Schemas and docs/reference.md from
// them (UnitKeys, ConfigKeys).
type Key struct {
	Name string
	Value
}

// Value is what a key takes: a Kind, with the bounds, words and keys the
// decoder reads it with, and what it means.
type Value struct {
	Kind     Kind
	Doc      string   // what the key means, for editors and the reference; "Default X." states a default
	Default  any      // the default an editor offers; nil for none
	Min, Max int64    // KindInt: the range the decoder accepts
	Words    []string // KindWord: the words, in their table's order
	Keys     []Key    // KindBlock, KindByID, KindItems: the keys of the block
}

// Kind is the form of a value: which of the decoder's readers reads it.
// A Kind named as a Go type (KindDuration is "Duration") is a value type
// several keys take; the schema package defines each once.
type Kind string

// The kinds of values.
const (
	KindText     Kind = "text"      // a string
	KindNonEmpty Kind = "non-empty" // a string that is not empty: a name, a path
	KindBool     Kind = "bool"
	KindInt      Kind = "int"       // a whole number from Min to Max
	KindWord     Kind = "word"      // one of Words
	KindHostPort Kind = "host:port" // an address to connect to
	KindListen   Kind = "listen"    // an address to listen on; port 0 picks one
	KindURL      Kind = "url"       // an http:// or https:// URL with a host
	KindEnvName  Kind = "env-name"  // the name of an environment variable

	KindDuration          Kind = "Duration"          // a Go duration: "90s"
	KindDurationOrSeconds Kind = "DurationOrSeconds" // a Go duration, or whole seconds
	KindSeconds           Kind = "Seconds"           // whole seconds, above zero
	KindSize              Kind = "Size"
	KindSignal            Kind = "Signal"
	KindSchedule          Kind = "Schedule"
	KindPrincipal         Kind = "Principal" // a user or group: a name or a number
	KindUmask             Kind = "Umask"
	KindPercent           Kind = "Percent"
	KindEnvFiles          Kind = "EnvFiles"
	KindRlimit            Kind = "Rlimit"

	KindArgs    Kind = "args"    // a program and its arguments: a list, not empty
	KindDeps    Kind = "deps"    // unit names, each once
	KindPorts   Kind = "ports"   // TCP ports, each once
	KindGroups  Kind = "groups"  // principals, each once
	KindOrigins Kind = "origins" // strings, each once
	KindEnv     Kind = "env"     // variable names to values

	KindBlock Kind = "block" // a mapping of Keys
	KindByID  Kind = "by-id" // a mapping of names the user chooses to blocks of Keys
	KindItems Kind = "items" // a list of blocks of Keys, each with every key
)

// UnitKeys are the keys of a unit file, in the order the canonical
// rendering writes them.
func UnitKeys() []Key { return unitFields.shape() }

// ConfigKeys are the keys of hermes.yaml.
func ConfigKeys() []Key { return configFields.shape() }

// takes is a Value of kind k meaning doc.
func takes(k Kind, doc string) Value { return Value{Kind: k, Doc: doc} }

// between is a whole number from lo to hi.
func between(lo, hi int64, doc string) Value { return Value{Kind: KindInt, Min: lo, Max: hi, Doc: doc} }

// oneOf is one of the words of t.
func oneOf[T comparable](t *word.Table[T], doc string) Value {
	return Value{Kind: KindWord, Words: t.Words(), Doc: doc}
}

// block is what a key of kind KindBlock, KindByID or KindItems takes:
// k's keys.
func block[V any](kind Kind, k keyed[V], doc string) Value {
	return Value{Kind: kind, Keys: k.shape(), Doc: doc}
}

// or is v offering def as its default.
func (v Value) or(def any) Value {
	v.Default = def
	return v
}
