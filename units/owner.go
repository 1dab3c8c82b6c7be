package units

import (
	"errors"

	"github.com/hermes-units/hermes/internal/word"
)

// The words of ownership (SPEC §2, §3): what a unit file says of its group
// (Ownership) and what its owner is (Role). They are the one vocabulary of
// the project: the ledger records them (package ledger), the supervisor
// spawns by them, the reconciler decides by them. Each parses strictly, and
// reads from JSON (UnmarshalText) with the same check, so that a value this
// build does not know is an error where it is read, not a string that
// matches nothing further on. It is written as its plain word.

// Ownership says whether a unit's group dies with its owner (SPEC §3).
type Ownership string

const (
	// Owned groups die with their owner, by any death. The default.
	Owned Ownership = "owned"
	// Adoptable groups survive a gateway owner and are re-adopted by the
	// next gateway; under a non-gateway owner they die with it.
	Adoptable Ownership = "adoptable"
	// PersistOnRelease groups survive any owner.
	PersistOnRelease Ownership = "persist_on_release"
)

var ownerships = word.Strings("ownership", Owned, Adoptable, PersistOnRelease)

// ParseOwnership parses an ownership mode; unknown values are an error.
func ParseOwnership(s string) (Ownership, error) { return ownerships.Parse(s) }

// Survivor reports whether o may outlive its owner: adoptable or
// persist_on_release. Whether it does depends on the owner's role too
// (under a worker, an adoptable group dies with it).
func (o Ownership) Survivor() bool { return o == Adoptable || o == PersistOnRelease }

// UnmarshalText parses text with ParseOwnership, and also takes the empty
// text: the zero Ownership, not recorded (a record made by hand, or from a
// process that was not tagged with one), which counts as Owned.
func (o *Ownership) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*o = ""
		return nil
	}
	return ownerships.Unmarshal(o, text)
}

// Role is the role of an owner (SPEC §2, §3). A daemon (hermesd, the
// config key role) is a gateway or a worker; RoleRun is hermesctl run's.
// The zero Role is not set: a config without role, or an owner that was
// not given one.
type Role string

const (
	// RoleGateway is a long-running daemon owner; only a gateway re-adopts.
	RoleGateway Role = "gateway"
	// RoleWorker is a non-gateway owner: its adoptable jobs die with it.
	RoleWorker Role = "worker"
	// RoleRun is the owner of one command run by hermesctl run, in the
	// foreground; never a daemon's role (ParseRole refuses it).
	RoleRun Role = "run"
)

var (
	roles      = word.Strings("role", RoleGateway, RoleWorker)
	ownerRoles = word.Strings("role", "", RoleGateway, RoleWorker, RoleRun)
)

// ParseRole parses a daemon's role: gateway or worker.
func ParseRole(s string) (Role, error) { return roles.Parse(s) }

// ParseOwnerRole parses the role of any owner, as the ledger records it:
// gateway, worker, run, or empty (not set).
func ParseOwnerRole(s string) (Role, error) { return ownerRoles.Parse(s) }

// UnmarshalText parses text with ParseOwnerRole.
func (r *Role) UnmarshalText(text []byte) error { return ownerRoles.Unmarshal(r, text) }

// Mode is how an owner contains its groups (supervisor.Options.Mode, the
// mode control.Supervisor reports). The zero Mode is automatic: cgroup
// where a writable cgroup v2 hierarchy is found, else pgroup.
type Mode string

const (
	ModeCgroup Mode = "cgroup" // each group in its own cgroup v2 (killed with cgroup.kill)
	ModePGroup Mode = "pgroup" // process groups, child subreaper and environment tags
)

// ErrMode reports a word that is no Mode.
var ErrMode = errors.New("unknown supervisor mode")

var modes = word.Strings("supervisor mode", "", ModeCgroup, ModePGroup).Wrap(ErrMode)

// ParseMode parses a mode; "" is accepted and means automatic.
func ParseMode(s string) (Mode, error) { return modes.Parse(s) }

// UnmarshalText parses text with ParseMode.
func (m *Mode) UnmarshalText(text []byte) error { return modes.Unmarshal(m, text) }
