package timeouts

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-units/hermes/internal/word"
)

// floorsJSON is the built-in model floor table (SPEC §10), kept as data so
// that adding a model is a one-line change reviewed like any other data.
// Each group names its condition ("when") and where it comes from
// ("source": the row of seed 004's floors table, and the report behind it).
//
//go:embed floors.json
var floorsJSON []byte

// builtinFloors is parsed once, when first asked for (not when a program
// that imports the package starts), and never mutated: MatchFloor copies
// before merging configured floors. The decoder reads each "when" through
// conditionWords, which the call names so that it is made first.
var builtinFloors = sync.OnceValue(func() []Floor { return mustParseFloors(floorsJSON, conditionWords) })

// Condition says which calls a floor covers.
type Condition int

const (
	// Always: every call to a matching model.
	Always Condition = iota
	// ThinkingOnly: only thinking calls (see Inputs.Thinking): the seed's
	// 240 s row covers "the thinking variants" of Claude Opus, and the same
	// model answering without thinking is a chat model, whose silence the
	// 180 s default already budgets.
	ThinkingOnly
)

var conditionWords = word.Ints[Condition]("Condition", "floor condition", "always", "thinking").Wrap(ErrInvalid)

// String returns the name used in floors.json: "always" or "thinking".
func (c Condition) String() string { return conditionWords.Name(c) }

// MarshalText implements encoding.TextMarshaler.
func (c Condition) MarshalText() ([]byte, error) { return conditionWords.Marshal(c) }

// UnmarshalText implements encoding.TextUnmarshaler: it reads "always"
// or "thinking"; anything else is an error wrapping ErrInvalid.
func (c *Condition) UnmarshalText(b []byte) error { return conditionWords.Unmarshal(c, b) }

// covers reports whether a floor of condition c applies to a call.
func (c Condition) covers(thinking bool) bool { return c == Always || thinking }

func mustParseFloors(b []byte, _ *word.Table[Condition]) []Floor {
	var groups []struct {
		Seconds int       `json:"seconds"`
		When    Condition `json:"when"`
		Source  string    `json:"source"`
		Slugs   []string  `json:"slugs"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&groups); err != nil {
		panic(fmt.Sprintf("timeouts: floors.json: %v", err))
	}
	var out []Floor
	for _, g := range groups {
		if g.Seconds <= 0 {
			panic(fmt.Sprintf("timeouts: floors.json: non-positive seconds %d", g.Seconds))
		}
		if g.Source == "" {
			panic(fmt.Sprintf("timeouts: floors.json: the %d s group %v names no source", g.Seconds, g.Slugs))
		}
		for _, s := range g.Slugs {
			out = append(out, Floor{Slug: strings.ToLower(s), Timeout: time.Duration(g.Seconds) * time.Second, When: g.When, Source: g.Source})
		}
	}
	return out
}

// MatchFloor finds the model floor of a call to model in the built-in table
// extended by extra. thinking says whether the request enables thinking; a
// model id naming a thinking variant (ThinkingModel) makes a thinking call
// too. A floor whose condition does not cover the call is not considered.
// Matching is case-insensitive on the part after the last "/"
// ("openai/o3-mini" → "o3-mini"); a slug matches when the name starts with
// it and the slug is followed by the end of the name or one of "-._:". The
// longest matching slug wins, so "o3-mini" (300 s) beats "o3" (600 s) and
// "deepseek-v4-flash-model" matches "deepseek-v4" while
// "some-deepseek-v4-flash" matches nothing.
//
// An extra floor whose slug is already in the table replaces the built-in
// value and keeps its condition and source (the operator owns the
// patience; the entry still covers the calls it did); extra floors with an
// empty slug or a non-positive timeout are ignored.
func MatchFloor(model string, thinking bool, extra []Floor) (Floor, bool) {
	thinking = thinking || ThinkingModel(model)
	return matchFloor(model, extra, func(f Floor) bool { return f.When.covers(thinking) })
}

// matchFloor is MatchFloor over the floors that accept allows.
func matchFloor(model string, extra []Floor, accept func(Floor) bool) (Floor, bool) {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return Floor{}, false
	}
	table := slices.Clone(builtinFloors())
	for _, f := range extra {
		f.Slug = strings.ToLower(strings.TrimSpace(f.Slug))
		if f.Slug == "" || f.Timeout <= 0 {
			continue
		}
		if i := slices.IndexFunc(table, func(b Floor) bool { return b.Slug == f.Slug }); i >= 0 && f.Source == "" {
			f.When, f.Source = table[i].When, table[i].Source
		}
		table = append(table, f)
	}
	var best Floor
	found := false
	for _, f := range table {
		if !slugMatches(name, f.Slug) || !accept(f) {
			continue
		}
		// Later entries (configured ones) win ties: the operator owns the data.
		if !found || len(f.Slug) >= len(best.Slug) {
			best, found = f, true
		}
	}
	return best, found
}

func slugMatches(name, slug string) bool {
	if slug == "" || !strings.HasPrefix(name, slug) {
		return false
	}
	if len(name) == len(slug) {
		return true
	}
	switch name[len(slug)] {
	case '-', '.', '_', ':':
		return true
	}
	return false
}

// ThinkingModel reports whether a model id names a thinking variant: the
// part after the last "/" holds the word "thinking" between separators
// ("claude-opus-4-5-thinking", "anthropic/claude-opus-4.1:thinking",
// "qwen3-235b-a22b-thinking-2507"). Case-insensitive.
func ThinkingModel(model string) bool {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return strings.ContainsRune("-._:", r) }), "thinking")
}
