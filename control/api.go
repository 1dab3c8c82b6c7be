// Package control is hermesd's control API: HTTP+JSON over a Unix socket
// (mode 0600 in a 0700 directory) that admits only the daemon's own uid or
// root, checked with SO_PEERCRED. It holds the wire types, the Backend that a
// daemon implements, the Server that serves a Backend, and the Client that
// hermesctl uses.
//
// The JSON of Status is a stable contract (SPEC §8): fields are added, never
// renamed or removed.
package control

import (
	"context"
	"errors"
	"time"

	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// Sentinel errors a Backend returns; the Server maps them to HTTP statuses
// and the Client maps them back, so errors.Is works across the socket.
var (
	ErrUnknownUnit = errors.New("unknown unit")      // 404
	ErrConflict    = errors.New("conflicting state") // 409: e.g. start of a unit whose file is invalid
)

// Status is the answer to `hermesctl status`.
type Status struct {
	Daemon       Daemon        `json:"daemon"`
	Supervisor   Supervisor    `json:"supervisor"`
	Units        []Unit        `json:"units"`
	ConfigErrors []ConfigError `json:"config_errors"`
	Proxy        *Proxy        `json:"proxy,omitempty"` // absent when the provider proxy is off
	// Recovery is what a gateway found, at its start, of the groups that
	// dead owners of its state directory left; absent when nothing.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Owned are the groups the daemon keeps for control owners (owned.go);
	// absent when none.
	Owned []OwnedGroup `json:"owned,omitempty"`
	// Loading is when hermesd began its first read of the units
	// directory, while that read lasts (Units is then empty: no unit is
	// started before it ends); absent once it is over. A units directory
	// on a slow filesystem makes it last.
	Loading time.Time `json:"loading_since,omitzero"`
}

// Recovery is what a gateway did at its start with the owned groups that
// dead owners left alive (hermesd and its supervisor killed together).
type Recovery struct {
	// Ended: owned groups of a dead hermesd whose units this gateway was
	// about to start (each would have been a duplicate); it ended them
	// (identity-checked: TERM, the unit's stop timeout, KILL) first.
	Ended []EndedGroup `json:"ended"`
	// Leftovers counts the other groups of dead owners still alive (a
	// dead `hermesctl run`'s, units no longer declared): see `hermesctl
	// adopt --orphans`.
	Leftovers int `json:"leftovers"`
}

// EndedGroup is one group a gateway ended at its start.
type EndedGroup struct {
	Unit  string    `json:"unit"`
	PID   int       `json:"pid"`
	PGID  int       `json:"pgid"`
	Owner int       `json:"owner_pid"` // the dead owner that spawned it
	At    time.Time `json:"at"`
	Error string    `json:"error,omitempty"` // why it could not be ended; "" when it was
}

// Proxy describes hermesd's provider proxy (SPEC §10).
type Proxy struct {
	Listen    string    `json:"listen"`    // host:port it serves on (gateway.listen)
	Providers []string  `json:"providers"` // provider ids, sorted
	Breakers  []Breaker `json:"breakers"`  // one per session, sorted by session
	// Connections are the client connections open now; Refused those
	// answered 503 over limits.max_connections since hermesd started.
	Connections int   `json:"connections"`
	Refused     int64 `json:"refused_connections"`
	// BodyBytes are the request body bytes held now (at most
	// limits.max_bodies_in_flight_bytes).
	BodyBytes int64       `json:"body_bytes_in_flight"`
	Limits    ProxyLimits `json:"limits"`
}

// ProxyLimits are the proxy's bounds in force (hermes.yaml gateway:), the
// connection cap as fitted to hermesd's descriptor limit.
type ProxyLimits struct {
	MaxConnections    int           `json:"max_connections"`
	MaxRequestBody    int64         `json:"max_request_body_bytes"`
	MaxBodiesInFlight int64         `json:"max_bodies_in_flight_bytes"`
	ReadHeaderTimeout time.Duration `json:"read_header_timeout_ns"`
	BodyReadTimeout   time.Duration `json:"body_read_timeout_ns"`
	IdleTimeout       time.Duration `json:"idle_timeout_ns"`
}

// Breaker is one session's give-up breaker.
type Breaker struct {
	Session  string `json:"session"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Streak   int    `json:"streak"` // consecutive stale kills of Model (a model change resets it)
	// ProviderStreak counts consecutive stale kills of Provider across
	// models; it trips the breaker when they span more than one model.
	ProviderStreak int            `json:"provider_streak"`
	TrippedBy      timeouts.Scope `json:"tripped_by,omitempty"` // model or provider while tripped
	Threshold      int            `json:"threshold"`            // HERMES_STREAM_STALE_GIVEUP in force; 0 disabled
	Tripped        bool           `json:"tripped"`
}

// Daemon describes hermesd itself.
type Daemon struct {
	PID     int        `json:"pid"`
	Role    units.Role `json:"role"` // gateway | worker
	Started time.Time  `json:"started"`
	Units   string     `json:"units_dir"`
	State   string     `json:"state_dir"`
	Metrics string     `json:"metrics_listen,omitempty"` // host:port of the Prometheus endpoint; absent when off
}

// Supervisor describes the death supervisor of the owner.
type Supervisor struct {
	PID    int        `json:"pid"`    // 0 while not started (lazy) or closed when idle
	Groups int        `json:"groups"` // registered groups
	Mode   units.Mode `json:"mode"`   // cgroup | pgroup
	Health Health     `json:"health"`
	// Ledger warns that spawn records wait in memory for a ledger that
	// cannot be written (a full disk): how many, and why. Absent while the
	// ledger is written.
	Ledger string `json:"ledger,omitempty"`
	// Orphans are the process groups (pgids) of processes re-parented to
	// hermesd that no evidence names as a unit's (pgroup mode): they die
	// with hermesd and are no unit's main process. Absent when none.
	Orphans []int `json:"orphans,omitempty"`
}

// Unit is one unit's state, or one adopted or released group.
type Unit struct {
	Name      string          `json:"name"`
	State     UnitState       `json:"state"` // inactive | stopped | disabled | starting | running | stopping | failed | exited | done | released | adopted | error (its file did not load, no good version is kept: Error says where)
	PID       int             `json:"pid"`
	PGID      int             `json:"pgid"`
	Cgroup    string          `json:"cgroup,omitempty"`
	Ownership units.Ownership `json:"ownership"`
	Restarts  int             `json:"restarts"`
	Adopted   bool            `json:"adopted"` // re-adopted from the ledger, or adopted with `hermesctl adopt`
	Ready     bool            `json:"ready"`
	Error     string          `json:"error"` // last error, "" if none
	Uptime    time.Duration   `json:"uptime_ns"`
	Ports     []int           `json:"ports,omitempty"`
	RSS       int64           `json:"rss_bytes"`
	// ExitStatus is the exit status of the latest run's leader once
	// reaped, in the shell's convention (128+N: killed by signal N).
	// Absent before any, and when hermesd could not read it: a re-adopted
	// group's leader is not its child, and a forking unit's launcher
	// exits 0 when its daemon starts.
	ExitStatus *int     `json:"exit_status,omitempty"`
	Log        string   `json:"log,omitempty"`
	Job        *Job     `json:"job,omitempty"`
	Requires   []string `json:"requires,omitempty"` // the unit's requires: (restart with dependents follows them back)
	// Description is the unit file's description: (absent when it has
	// none, and for adopted and released groups).
	Description string `json:"description,omitempty"`
	// Daemonized is the number of processes a simple unit's leader left
	// when it exited 0: the unit runs on with no main pid (PID 0), and
	// Error says what to do. 0 otherwise.
	Daemonized int `json:"daemonized,omitempty"`
	// Disabled: `hermesctl disable`d, kept stopped until `enable`, across
	// restarts of hermesd and reboots; State says "disabled" once the group
	// is gone. Stopped: stopped by `hermesctl stop`, kept so until `start`
	// within the boot; State says "stopped" once the group is gone. A
	// stopped job still fires on its schedule: never Stopped.
	Disabled bool `json:"disabled,omitempty"`
	Stopped  bool `json:"stopped,omitempty"`
	// Masked: `hermesctl mask`ed; nothing starts it (start, restart,
	// enable, a unit that requires it, its schedule, a reload) until
	// `unmask`, across restarts of hermesd and reboots. A unit masked
	// without --now may still run; once its group is gone State says
	// "stopped" (or "disabled" when it is that too).
	Masked bool `json:"masked,omitempty"`
	// What a client waiting for a start needs (`hermesctl start`): the
	// unit's type (simple | oneshot | forking), its readiness probe in
	// words ("tcp 127.0.0.1:8080", "http http://…/health", "log /ready/",
	// "notify"; "" none: running is ready), its after: list and the
	// timeouts in force. Absent for adopted and released groups.
	Type     units.Type `json:"type,omitempty"`
	Probe    string     `json:"probe,omitempty"`
	After    []string   `json:"after,omitempty"`
	Timeouts *Timeouts  `json:"timeouts,omitempty"`
	// RemainAfterExit: a oneshot with remain_after_exit, which counts as
	// active once done (systemd's RemainAfterExit=yes).
	RemainAfterExit bool `json:"remain_after_exit,omitempty"`
}

// Timeouts are a unit's timeouts in force: its file's, else the defaults.
// Zero is none.
type Timeouts struct {
	Start      time.Duration `json:"start_ns"`                 // spawn to ready; a oneshot has none
	Stop       time.Duration `json:"stop_ns"`                  // grace between the stop signal and KILL
	RuntimeMax time.Duration `json:"runtime_max_ns,omitempty"` // a run is stopped after this long
}

// Job is the schedule state of a unit with schedule: (SPEC §9).
type Job struct {
	Schedule string    `json:"schedule"`
	Next     time.Time `json:"next"`
	LastRun  string    `json:"last_run,omitempty"`
	Result   JobResult `json:"result,omitempty"`  // success | failed | budget exceeded | running | stopped
	RunID    string    `json:"run_id,omitempty"`  // HERMES_RUN_ID of the latest run
	Deadline time.Time `json:"deadline,omitzero"` // of the latest run, when it has a budget
	Skipped  int       `json:"skipped,omitempty"` // fires skipped because a run was still running
	// Runs counts the runs that ended since hermesd started, by result
	// (success, failed, budget exceeded, stopped). Absent before the first.
	Runs map[JobResult]int `json:"runs,omitempty"`
	// Duration is how long the latest run lasted, or has lasted while it
	// runs; Budget is its run budget (absent: none).
	Duration time.Duration `json:"duration_ns,omitempty"`
	Budget   time.Duration `json:"budget_ns,omitempty"`
}

// ConfigError is a unit file or config file that did not load: the
// config.error event's error.
type ConfigError = events.FileError

// Plan is what a reload does or would do.
type Plan struct {
	Start   []string      `json:"start"`
	Stop    []string      `json:"stop"`
	Restart []string      `json:"restart"`
	Keep    []string      `json:"keep"`
	Errors  []ConfigError `json:"errors"`
	// Order is every declared unit in the order units start: each comes
	// after what it waits for (after: and requires:).
	Order []Step `json:"order,omitempty"`
}

// Step is one unit of a plan's start order and the conditions it starts
// on, in words: "migrate is done (exit 0)", "db is ready", "db is up".
type Step struct {
	Unit  string     `json:"unit"`
	Type  units.Type `json:"type"`
	Waits []string   `json:"waits,omitempty"`
}

// Backend is what a daemon offers the control API. Every method is safe for
// concurrent use. Stop returns once the unit's group is empty (or ctx ends).
type Backend interface {
	Status(ctx context.Context, units ...string) (Status, error)
	Start(ctx context.Context, unit string) error
	Stop(ctx context.Context, unit string) error
	Restart(ctx context.Context, unit string) error
	Reload(ctx context.Context, dryRun bool) (Plan, error)
	// LogPath is the unit's current log file, for `hermesctl logs`.
	LogPath(ctx context.Context, unit string) (string, error)
	// Adopt, Orphans and Release transfer ownership (see Adopter).
	Adopter
}

// Actor is a Backend whose actions say what they did: the run a start of a
// job began, the units a stop took down with the unit (ActionResult). Act
// does what Start, Stop or Restart does, with the same waits and errors;
// an unknown action is ErrBadRequest. The Server answers with Act's result
// when its Backend is an Actor, and with the bare ActionResult otherwise.
type Actor interface {
	Act(ctx context.Context, unit string, a Action) (ActionResult, error)
}
