package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kind says what the harness expects of a unit's processes when hermesd
// dies.
type kind int

const (
	owned    kind = iota // dies with hermesd (within the supervisor's grace)
	survivor             // adoptable or persist_on_release: lives on, re-adopted
)

// unitDef is one unit of the mixed set.
type unitDef struct {
	name string
	kind kind
	yaml string // body, without the env: line (added by write)
}

// escapeeArg marks the setsid'd sleep of the escapee unit: it leads its own
// session and group by design, so it is not counted as a second group of
// its unit; it must still die with hermesd.
const escapeeArg = "100001"

// unitSet is the mixed unit set every round runs.
var unitSet = []unitDef{
	{"owned", owned, "shell: 'sleep 100000 & exec sleep 100000'\n"},
	{"termignore", owned, "shell: \"trap '' TERM; exec sleep 100000\"\ntimeouts: {stop: 300ms}\n"},
	{"escapee", owned, "shell: 'setsid sleep " + escapeeArg + " & exec sleep 100000'\n"},
	{"notify", owned, "shell: 'systemd-notify --ready; exec sleep 100000'\nready: {notify: true}\ntimeouts: {start: 20s}\n"},
	{"job", survivor, "shell: 'exec sleep 100000'\nownership: adoptable\nreason: a background job of the gateway, kept across its restarts\n"},
	{"keep", survivor, "shell: 'sleep 100000 & exec sleep 100000'\nownership: persist_on_release\nreason: costly to rebuild, kept on release\n"},
}

func defOf(name string) (unitDef, bool) {
	for _, d := range unitSet {
		if d.name == name {
			return d, true
		}
	}
	return unitDef{}, false
}

// writeUnit writes d's file with generation gen in its environment (a
// spawn-relevant field: a new gen restarts the unit). atomic chooses an
// editor's save (temp file, rename) over a write in place, which hermesd
// may read half-written (it then keeps the last good version).
func writeUnit(dir string, d unitDef, gen int, atomic bool) error {
	body := d.yaml + fmt.Sprintf("env: {CHAOS_UNIT: %s, CHAOS_GEN: %q}\n", d.name, fmt.Sprint(gen))
	path := filepath.Join(dir, d.name+".yaml")
	if !atomic {
		return os.WriteFile(path, []byte(body), 0o600)
	}
	tmp := filepath.Join(dir, "."+d.name+".yaml.swp")
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// unitNames lists the units of a kind.
func unitNames(k kind) []string {
	var out []string
	for _, d := range unitSet {
		if d.kind == k {
			out = append(out, d.name)
		}
	}
	return out
}

func allNames() string {
	var out []string
	for _, d := range unitSet {
		out = append(out, d.name)
	}
	return strings.Join(out, ", ")
}
