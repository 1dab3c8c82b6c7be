package reconciler

import (
	"context"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// Process is a spawned unit's leader.
type Process interface {
	Group() supervisor.Group
	// Done is closed once the leader has exited and been reaped; Err then
	// holds nil for exit status 0, else the exit error.
	Done() <-chan struct{}
	Err() error
}

// Spawner starts and stops groups: the part of the supervisor the reconciler
// uses. Every method is safe for concurrent use; the reconciler calls Stop
// and WatchExit from goroutines it owns, Spawn from its state goroutine.
type Spawner interface {
	// Spawn starts a unit in its own group, registered with the death
	// supervisor unless spec.Survive, and recorded in the ledger.
	Spawn(ctx context.Context, spec supervisor.Spec) (Process, error)
	// Stop sends sig to every member of g, waits up to grace for the group
	// to be empty, then KILLs and waits until it is; it returns once the
	// group is empty (or ctx ends).
	Stop(ctx context.Context, g supervisor.Group, sig syscall.Signal, grace time.Duration) error
	// WatchExit returns a channel closed when the leader of g, which is not
	// our child (a re-adopted group), exits.
	WatchExit(ctx context.Context, g supervisor.Group) (<-chan struct{}, error)
}

// Survivor is a ledger entry a restarting gateway may re-adopt.
type Survivor struct {
	Unit       string
	Group      supervisor.Group
	Ownership  units.Ownership
	Log        string
	Owner      proc.Identity
	OwnerAlive bool
	State      ledger.State // the ledger entry's
	Spawn      string       // the spawn key recorded (the leader's EnvSpawn tag)
}

// Checkpoint is the ledger as the reconciler sees it: the survivors of a
// previous owner, and who started a process.
type Checkpoint interface {
	// Survivors lists adoptable and persist_on_release entries, alive or
	// not, with whether their owner is alive.
	Survivors(ctx context.Context) ([]Survivor, error)
	// Adopted records that this owner now holds s's group.
	Adopted(ctx context.Context, s Survivor) error
	// Released records that s's group is nobody's: it is no longer declared.
	Released(ctx context.Context, s Survivor) error
	// Who names the ledger entry whose group holds pid; ok is false when no
	// entry does.
	Who(ctx context.Context, pid int) (s Survivor, ok bool, err error)
}
