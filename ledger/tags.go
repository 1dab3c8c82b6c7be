package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/proc"
)

// The environment tags every spawned child carries. They survive in
// /proc/PID/environ for the child's whole life (and are inherited by its
// descendants), so a lost ledger can be rebuilt and a re-parented escapee
// found.
const (
	// EnvUnit holds the unit's name, as in Entry.Unit.
	EnvUnit = "HERMES_UNIT"
	// EnvOwner holds the owner's identity as "pid@starttime"
	// (proc.Identity.String; the boot is the current one).
	EnvOwner = "HERMES_OWNER"
	// EnvSpawn holds the spawn key, unique per spawn (NewSpawnKey: 16 hex
	// digits), as in Entry.Spawn. It tells a leader from the descendants
	// that inherited its tags.
	EnvSpawn = "HERMES_SPAWN"
	// EnvOwnership holds the ownership mode, as in Entry.Ownership.
	EnvOwnership = "HERMES_OWNERSHIP"
	// EnvState holds the state directory of the ledger that records the
	// spawn (Ledger.Dir). A rebuild takes only the processes of its own
	// directory: every hermesd on the machine tags its children, and a
	// survivor of another directory belongs to that directory's gateways.
	EnvState = "HERMES_STATE"
	// EnvRole holds the role of the owner that spawned it (gateway, worker,
	// run), as in Entry.Role: a rebuild, or a gateway looking for a dead
	// hermesd's spawns that its ledger never recorded, tells a dead
	// hermesd's unit from a dead `hermesctl run`'s command.
	EnvRole = "HERMES_ROLE"
)

// NewSpawnKey returns a fresh random spawn key (16 hex digits).
func NewSpawnKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// ErrBadOwner reports an EnvOwner value that is not "pid@starttime".
var ErrBadOwner = errors.New("malformed owner tag")

// ParseOwner parses an EnvOwner value ("pid@starttime") into an identity of
// the current boot.
func ParseOwner(s string) (proc.Identity, error) {
	p, st, ok := strings.Cut(s, "@")
	if !ok {
		return proc.Identity{}, fmt.Errorf("%w: %q, want pid@starttime", ErrBadOwner, s)
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return proc.Identity{}, fmt.Errorf("%w: %q: bad pid", ErrBadOwner, s)
	}
	start, err := strconv.ParseUint(st, 10, 64)
	if err != nil {
		return proc.Identity{}, fmt.Errorf("%w: %q: bad start time", ErrBadOwner, s)
	}
	boot, _ := proc.BootID()
	return proc.Identity{PID: pid, StartTime: start, BootID: boot}, nil
}

// tags reads the hermes tags from an environment; ok is false when the
// unit tag is missing.
func tags(env []string) (t map[string]string, ok bool) {
	t = map[string]string{}
	for _, kv := range env {
		k, v, found := strings.Cut(kv, "=")
		if !found {
			continue
		}
		switch k {
		case EnvUnit, EnvOwner, EnvSpawn, EnvOwnership, EnvState, EnvRole:
			t[k] = v
		}
	}
	return t, t[EnvUnit] != ""
}
