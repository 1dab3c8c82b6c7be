package ledger

import (
	"os"
	"path/filepath"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// Rebuild returns an entry for every live process that carries the
// environment tags, with stateDir (Ledger.Dir) as its EnvState, and leads
// its process group (pid == pgid), in pid order. It is how a corrupt ledger
// is replaced. A tagged process of another state directory, or one without
// EnvState, is never taken: it is some other ledger's, and a gateway
// re-adopts (or stops) what its ledger holds. Nor is one whose
// EnvOwnership or EnvRole is a word this build does not know: SpawnOwned
// tags none, and the file could not hold it. What the tags do not carry is
// left empty (Reason, Log; Role for spawns older than EnvRole); Spawned is the leader's start time;
// Cgroup is the leader's cgroup v2 directory when that is neither the root
// nor the rebuilding process's own cgroup (a group spawned in pgroup mode
// shares its owner's cgroup, which says nothing about the group).
func Rebuild(stateDir string) ([]Entry, error) {
	pids, err := proc.Pids()
	if err != nil {
		return nil, err
	}
	boot, err := proc.BootID()
	if err != nil {
		return nil, err
	}
	mount := proc.CgroupMount()
	own := proc.Cgroup(os.Getpid())
	var out []Entry
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil || st.Zombie() || st.PGID != pid {
			continue
		}
		env, err := proc.Environ(pid)
		if err != nil {
			continue
		}
		t, ok := tags(env)
		if !ok || stateDir == "" || t[EnvState] != stateDir {
			continue
		}
		var ownership units.Ownership // "" when untagged, as in a file
		if err := ownership.UnmarshalText([]byte(t[EnvOwnership])); err != nil {
			continue // SpawnOwned tags only the ownerships it knows: not its tags
		}
		role, err := units.ParseOwnerRole(t[EnvRole])
		if err != nil {
			continue // nor a role it does not know
		}
		e := Entry{
			Unit:      t[EnvUnit],
			Leader:    proc.Identity{PID: pid, StartTime: st.StartTime, BootID: boot},
			PGID:      pid,
			Ownership: ownership,
			Role:      role,
			Spawn:     t[EnvSpawn],
			Spawned:   proc.Started(st.StartTime),
		}
		if o, err := ParseOwner(t[EnvOwner]); err == nil {
			e.Owner = o
		}
		if argv, err := proc.Cmdline(pid); err == nil {
			e.Argv = Redact(argv)
		}
		if cg := proc.Cgroup(pid); mount != "" && cg != "" && cg != "/" && cg != own {
			e.Cgroup = filepath.Join(mount, cg)
		}
		out = append(out, e)
	}
	return out, nil
}
