// Package units defines a unit (one YAML file in the units directory) and the
// main configuration file hermes.yaml, and loads both with errors that name
// file, line and column.
//
// Durations are time.Duration inside; seconds and "1m30s" strings exist only
// at the YAML edge. Enums are typed and reject unknown values when parsed.
package units

import "time"

//lint:file-ignore ST1011 RestartSec mirrors the restart_sec key, and other packages already use the name

// Restart is a unit's restart policy.
type Restart string

const (
	RestartNo        Restart = "no"
	RestartOnFailure Restart = "on-failure"
	RestartAlways    Restart = "always"
)

// Type is how a unit's process tells that the unit is up, as systemd's
// Type= (SPEC §5, §13).
type Type string

const (
	// Simple units are up while their leader runs: the program stays in
	// the foreground. The default.
	Simple Type = "simple"
	// Oneshot units are a step that runs to completion: done when the
	// process exits 0; after: dependents start only then.
	Oneshot Type = "oneshot"
	// Forking units start a launcher that daemonizes and exits 0; the unit
	// is up while the daemon it left runs (its main pid: pid_file, or the
	// one process left).
	Forking Type = "forking"
)

// Size is a number of bytes; YAML accepts 1048576, "10MiB", "512KB", ...
type Size int64

// Spec is one unit, parsed and validated. Paths are absolute, "~" expanded,
// relative ones resolved against the unit file's directory.
type Spec struct {
	Name        string            // file name without .yaml/.yml
	File        string            // absolute path of the unit file
	Description string            //
	Type        Type              // simple (default), oneshot or forking
	Command     []string          // argv, no shell; exclusive with Shell
	Shell       string            // run by /bin/sh -c; exclusive with Command
	Workdir     string            // absolute; "" means the units directory
	Env         map[string]string //
	PIDFile     string            // forking: absolute path of the daemon's pid file; "" = the one process left
	RemainAfter bool              // oneshot: remain_after_exit, counts as active once done
	Ownership   Ownership         //
	Reason      string            // required unless Ownership is Owned
	Restart     Restart           //
	RestartSec  time.Duration     // first backoff, doubles up to RestartMax
	RestartMax  time.Duration     //
	StartLimit  StartLimit        //
	After       []string          // start order: wait until these are ready
	Requires    []string          // stop this one when one of these stops or fails
	Ready       Ready             //
	Timeouts    Timeouts          //
	StopSignal  Signal            //
	// ReloadSignal and Reload are how `hermesctl reload UNIT` asks the
	// running unit to reload: a signal to its main process, or a command
	// run beside it (argv, no shell). At most one is set; neither: the unit
	// cannot be reloaded, only restarted.
	ReloadSignal Signal        // reload_signal
	Reload       []string      // reload
	Ports        []int         // checked free before start
	Log          Log           //
	Schedule     string        // 5-field cron; makes the unit a job (SPEC §9)
	RunBudget    time.Duration // jobs: run_budget_seconds
	WrapupSig    Signal        // jobs: optional signal at 80 % of the budget
	Provider     *Provider     // the unit serves an LLM endpoint (SPEC §10)
	ProxyEnv     bool          // gets OPENAI_BASE_URL and OPENAI_API_KEY for the provider proxy (jobs always do)
	Exec                       // user, limits, env files: from the defaults, then the unit's own keys
}

// StartLimit bounds restarts: more than Burst starts within Interval and the
// unit is left failed.
type StartLimit struct {
	Burst    int
	Interval time.Duration
}

// Ready says when a started unit counts as ready. At most one probe is set;
// none means ready as soon as it runs.
type Ready struct {
	TCP    string // host:port that accepts a connection
	HTTP   string // URL that answers 2xx
	Notify bool   // READY=1 on NOTIFY_SOCKET
	Log    string // regular expression matched against output lines
}

// Timeouts of a unit. Zero RuntimeMax and Watchdog mean none.
type Timeouts struct {
	Start      time.Duration
	Stop       time.Duration // grace between the stop signal and KILL
	RuntimeMax time.Duration
	Watchdog   time.Duration
}

// Log is where a unit's stdout and stderr go, and how they rotate.
type Log struct {
	Path    string // absolute; "" means <state>/logs/<name>.log
	MaxSize Size
	Keep    int
}

// Signal is a signal number parsed from "TERM", "SIGTERM" or "15".
type Signal int

// Provider is an LLM endpoint: in hermes.yaml under providers.<id>, or a
// unit's provider: block.
type Provider struct {
	ID           string
	BaseURL      string
	APIKeyEnv    string                   // name of the env var holding the API key
	APIKeyFile   string                   // absolute path of a file holding the API key (a mounted Secret); read at each call, so a rotated key is taken without a reload
	StaleTimeout time.Duration            // stale_timeout_seconds; 0 = implicit
	Models       map[string]ProviderModel // per-model settings, keyed by model id
	Tiers        []Tier                   // context tiers replacing the defaults
	Floors       []Floor                  // extra model floors
}

// ProviderModel holds per-model settings.
type ProviderModel struct {
	StaleTimeout time.Duration // stale_timeout_seconds; 0 = implicit
}

// Tier raises implicit stale timeouts above a context size.
type Tier struct {
	AboveTokens int
	Timeout     time.Duration
}

// Floor is a model floor: models whose slug matches get at least Timeout.
type Floor struct {
	Slug    string
	Timeout time.Duration
}

// Config is the main configuration file, hermes.yaml.
type Config struct {
	File      string // absolute path; "" when no file was found (all defaults)
	Daemon    Daemon
	Agent     Agent
	Providers map[string]Provider
	Gateway   Gateway
	Metrics   Metrics
	Probes    Probes
	Defaults  Defaults
}

// Daemon holds the settings hermesd also takes as flags and HERMES_* env
// (top-level keys units, state, socket, role). Empty strings mean "not set
// in the file"; hermesd layers flag > env > file > default over them.
// Paths are absolute, "~" expanded, relative ones resolved against the
// config file's directory.
type Daemon struct {
	Units  string
	State  string
	Socket string
	Role   Role // "" when not set; else RoleGateway or RoleWorker
}

// Agent holds agent.* settings (SPEC §10).
type Agent struct {
	RunBudget               time.Duration // run_budget_seconds; 0 = none
	LocalStreamStaleTimeout time.Duration // local_stream_stale_timeout
	StaleTimeoutHardCap     time.Duration // stale_timeout_hard_cap; 0 = none
	StreamDrainTimeout      time.Duration // stream_drain_timeout
}

// Gateway holds gateway.* settings: where the provider proxy listens, who
// may call it, and the bounds that keep it from starving hermesd.
// DefaultConfig fills every bound; a zero never reaches the proxy from a
// loaded file.
type Gateway struct {
	Listen string // proxy address, default 127.0.0.1:7411
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests the proxy serves; a request with any other Origin header is
	// refused. Empty: no browser page may call it.
	AllowedOrigins []string
	// MaxConnections caps the proxy's client connections open at once;
	// the next one is answered 503 and closed.
	MaxConnections int
	// MaxRequestBody caps one request body.
	MaxRequestBody Size
	// MaxBodiesInFlight caps the request body bytes held by all requests
	// at once; never below MaxRequestBody.
	MaxBodiesInFlight Size
	// ReadHeaderTimeout, BodyReadTimeout and IdleTimeout bound a request's
	// headers, its body, and a kept-alive connection between requests.
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	IdleTimeout       time.Duration
}

// Metrics holds metrics.* settings: where hermesd serves Prometheus
// metrics. Off while Listen is "".
type Metrics struct {
	Listen    string // host:port, loopback unless Remote; "" = off
	TokenFile string // absolute path of a file holding the bearer token a scrape must send; "" = none
	// Remote allows a Listen address that is not loopback (a pod's IP,
	// or 0.0.0.0, where a cluster's Prometheus scrapes), and requests
	// whose Host is not loopback: without it, such an address is refused
	// at start.
	Remote bool
}

// Probes holds probes.* settings: where hermesd answers a cluster's
// liveness and readiness probes (/livez, /readyz). Off while Listen is "".
type Probes struct {
	Listen string // host:port; "" = off
	// Remote allows a Listen address that is not loopback (a pod's IP, or
	// 0.0.0.0, where the kubelet's HTTP probes come from): without it,
	// such an address is refused at start.
	Remote bool
}

// Defaults of the gateway's bounds (hermes.yaml gateway:).
const (
	DefaultMaxConnections    = 512
	DefaultMaxRequestBody    = Size(64 << 20)
	DefaultMaxBodiesInFlight = Size(256 << 20)
	DefaultReadHeaderTimeout = 30 * time.Second
	DefaultBodyReadTimeout   = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// Defaults are unit fields applied where a unit leaves them unset.
type Defaults struct {
	Restart    Restart
	RestartSec time.Duration
	RestartMax time.Duration
	StartLimit StartLimit
	Timeouts   Timeouts
	StopSignal Signal
	Log        Log
	Exec       // paths of env_file: resolve against hermes.yaml's directory
}
