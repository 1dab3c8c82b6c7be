package importer

import (
	"fmt"

	"github.com/hermes-units/hermes/units"
)

// Reasons shared by the converters, so that the same gap reads the same
// whatever the source.
const (
	whyNotYet     = "not supported by hermes yet"
	whyUser       = "not carried over: write user: and group: in the unit (they need hermesd to run as root)"
	whyLimits     = whyNotYet + ": a unit's limits are limits: (rlimits), nice, and in cgroup mode memory_max, cpu_weight, cpu_max and tasks_max"
	whyEnvFile    = "not carried over: write env_file: in the unit"
	whyNoSeparate = "hermes writes a unit's stdout and stderr to one log file"
)

// noter collects the notes of one source file, for the unit being
// converted.
type noter struct {
	file string
	unit string
	list *[]Note
}

func (n *noter) add(key, why string, args ...any) {
	if len(args) > 0 {
		why = fmt.Sprintf(why, args...)
	}
	*n.list = append(*n.list, Note{File: n.file, Unit: n.unit, Key: key, Why: why})
}

// forUnit is n for the keys of another unit of the same file.
func (n *noter) forUnit(name string) *noter {
	return &noter{file: n.file, unit: name, list: n.list}
}

// maxDelay is units.MaxDelay as notes write it.
var maxDelay = units.FormatDuration(units.MaxDelay)
