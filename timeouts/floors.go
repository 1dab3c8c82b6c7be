package timeouts

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// floorsJSON is the built-in model floor table (SPEC §10), kept as data so
// that adding a model is a one-line change reviewed like any other data.
//
//go:embed floors.json
var floorsJSON []byte

// builtinFloors is parsed once at init and never mutated: MatchFloor copies
// before merging configured floors.
var builtinFloors = mustParseFloors(floorsJSON)

func mustParseFloors(b []byte) []Floor {
	var groups []struct {
		Seconds int      `json:"seconds"`
		Slugs   []string `json:"slugs"`
	}
	if err := json.Unmarshal(b, &groups); err != nil {
		panic(fmt.Sprintf("timeouts: floors.json: %v", err))
	}
	var out []Floor
	for _, g := range groups {
		if g.Seconds <= 0 {
			panic(fmt.Sprintf("timeouts: floors.json: non-positive seconds %d", g.Seconds))
		}
		for _, s := range g.Slugs {
			out = append(out, Floor{Slug: strings.ToLower(s), Timeout: time.Duration(g.Seconds) * time.Second})
		}
	}
	return out
}

// BuiltinFloors returns a copy of the built-in floor table.
func BuiltinFloors() []Floor { return slices.Clone(builtinFloors) }

// MatchFloor finds the model floor for model in the built-in table extended
// by extra. Matching is case-insensitive on the part after the last "/"
// ("openai/o3-mini" → "o3-mini"); a slug matches when the name starts with
// it and the slug is followed by the end of the name or one of "-._:". The
// longest matching slug wins, so "o3-mini" (300 s) beats "o3" (600 s) and
// "deepseek-v4-flash-model" matches "deepseek-v4" while
// "some-deepseek-v4-flash" matches nothing.
//
// An extra floor whose slug is already in the table replaces the built-in
// value (the operator owns the data); extra floors with an empty slug or a
// non-positive timeout are ignored.
func MatchFloor(model string, extra []Floor) (Floor, bool) {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return Floor{}, false
	}
	var best Floor
	found := false
	consider := func(f Floor, override bool) {
		if !slugMatches(name, f.Slug) {
			return
		}
		if !found || len(f.Slug) > len(best.Slug) || (override && len(f.Slug) == len(best.Slug)) {
			best, found = f, true
		}
	}
	for _, f := range builtinFloors {
		consider(f, false)
	}
	for _, f := range extra {
		f.Slug = strings.ToLower(strings.TrimSpace(f.Slug))
		if f.Slug == "" || f.Timeout <= 0 {
			continue
		}
		consider(f, true)
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
