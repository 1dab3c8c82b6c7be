package supervisor

import (
	"strings"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// SpawnerOf returns the live owner that spawned pid, on the evidence pid
// itself carries, strongest first: its cgroup (below hermes-OWNER, or a
// kept cgroup named by its spawn key), its tags (EnvOwner), its mark
// (RLIMIT_LOCKS, see markOf). ok is false when none names a live owner:
// pid is nobody's spawn, its owner has exited, or pid cannot be read.
//
// It answers what a ledger cannot while a spawn's record is still on its
// way to the file: whose is this group? A caller about to own a group
// that is another live owner's spawn refuses it (see Owner.Own).
func SpawnerOf(pid int) (owner proc.Identity, ok bool) {
	for _, id := range []proc.Identity{cgroupSpawner(pid), tagSpawner(pid), markSpawner(pid)} {
		if id.PID > 0 && id.Alive() {
			return id, true
		}
	}
	return proc.Identity{}, false
}

// cgroupSpawner reads the owner out of pid's cgroup v2 path:
// …/hermes-PID_START/UNIT.KEY, or …/hermes-kept/UNIT.KEY, whose spawn key
// KEY is PID_START_SEQ.
func cgroupSpawner(pid int) proc.Identity {
	parts := strings.Split(proc.Cgroup(pid), "/")
	for i, name := range parts {
		s, ok := strings.CutPrefix(name, "hermes-")
		if !ok {
			continue
		}
		if s == "kept" && i+1 < len(parts) {
			_, key, _ := strings.Cut(parts[i+1], ".")
			return keyOwner(key)
		}
		if id := keyOwner(s); id.PID > 0 {
			return id
		}
	}
	return proc.Identity{}
}

// keyOwner is the owner named by PID_START[_SEQ], or the zero Identity.
func keyOwner(s string) proc.Identity {
	if ownerOf(s) == 0 {
		return proc.Identity{}
	}
	p, st, _ := strings.Cut(s, "_")
	st, _, _ = strings.Cut(st, "_")
	id, err := ledger.ParseOwner(p + "@" + st)
	if err != nil {
		return proc.Identity{}
	}
	return id
}

// tagSpawner is the owner pid's environment names (EnvOwner).
func tagSpawner(pid int) proc.Identity {
	env, err := proc.Environ(pid)
	if err != nil {
		return proc.Identity{}
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, ledger.EnvOwner+"="); ok {
			id, _ := ledger.ParseOwner(v)
			return id
		}
	}
	return proc.Identity{}
}

// markSpawner is the owner pid's mark names: the live process with the
// mark's owner pid whose start time agrees with the mark's 13 bits of it
// (the zero Identity when the mark is not one of ours).
func markSpawner(pid int) proc.Identity {
	m, ok := markOfPid(pid)
	if !ok || m == 0 || m >= 1<<63 {
		return proc.Identity{}
	}
	owner := int(m >> 28 & (1<<22 - 1))
	if owner <= 1 {
		return proc.Identity{}
	}
	id, err := proc.Read(owner)
	if err != nil || id.StartTime%(1<<13) != m>>50 {
		return proc.Identity{}
	}
	return id
}
