package systemdunit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/units"
)

// execOpts writes a unit's identity, limits and environment files
// (units.Exec) as systemd's options of the same meaning: User=, Group=,
// SupplementaryGroups=, UMask=, Nice=, Limit*=, EnvironmentFile=,
// MemoryMax=, CPUWeight=, CPUQuota= and TasksMax=. Where systemd reads
// them otherwise than hermes, a comment above says how.
func execOpts(b *builder, s *units.Spec) error {
	e := s.Exec
	if err := identityOpts(b, e); err != nil {
		return err
	}
	if e.Umask != nil {
		b.add(secService, "UMask", fmt.Sprintf("%04o", *e.Umask))
	}
	if e.Nice != nil {
		b.add(secService, "Nice", strconv.Itoa(*e.Nice))
	}
	for _, name := range slices.Sorted(maps.Keys(e.Limits)) {
		// Limit*= reads a limit as ParseRlimit does: one value, or soft:hard;
		// infinity for none; a number without a suffix in the resource's own
		// unit (bytes, seconds, microseconds for rttime).
		b.add(secService, "Limit"+strings.ToUpper(name), e.Limits[name].String())
	}
	for i, f := range e.EnvFiles {
		v, err := plain("EnvironmentFile", f.Path)
		if err != nil {
			return err
		}
		if f.Optional {
			v = "-" + v
		}
		var note []string
		if i == 0 && len(s.Env) > 0 {
			note = []string{
				"systemd gives a variable of these files precedence over Environment=;",
				"hermes gives env: precedence: a variable set in both differs.",
			}
		}
		b.add(secService, "EnvironmentFile", v, note...)
	}
	c := e.Cgroup
	if c.MemoryMax > 0 {
		b.add(secService, "MemoryMax", strconv.FormatInt(int64(c.MemoryMax), 10))
	}
	if c.CPUWeight > 0 {
		b.add(secService, "CPUWeight", strconv.Itoa(c.CPUWeight))
	}
	if c.CPUMax > 0 {
		b.add(secService, "CPUQuota", strconv.Itoa(c.CPUMax)+"%")
	}
	if c.TasksMax > 0 {
		b.add(secService, "TasksMax", strconv.Itoa(c.TasksMax))
	}
	return nil
}

// identityOpts writes User=, Group= and SupplementaryGroups=. A user
// manager (systemctl --user) runs every service as its own user, so the
// first of them says that the file takes effect as a system unit.
func identityOpts(b *builder, e units.Exec) error {
	note := []string{
		"A user manager (systemctl --user) cannot run a service as another user",
		"or group: install this file in /etc/systemd/system for these to hold.",
	}
	for _, o := range []struct{ name, v string }{{"User", e.User}, {"Group", e.Group}} {
		if o.v == "" {
			continue
		}
		v, err := plain(o.name, o.v)
		if err != nil {
			return err
		}
		b.add(secService, o.name, v, note...)
		note = nil
	}
	switch {
	case e.Groups == nil:
	case len(e.Groups) == 0:
		// hermes: none at all. systemd has no way to drop the user's
		// own groups (User= always adds them).
		b.header = append(b.header, "", "supplementary_groups: [] (none) has no systemd equivalent: with User=,",
			"systemd gives the process the user's groups from the group database.")
	default:
		words := make([]string, len(e.Groups))
		for i, g := range e.Groups {
			words[i] = quoteWord(g)
		}
		add := append(note, "systemd adds these groups to the user's own from the group database;",
			"hermes gives these alone.")
		b.add(secService, "SupplementaryGroups", strings.Join(words, " "), add...)
	}
	return nil
}
