// Package schema holds the JSON Schemas of unit files (unit.schema.json)
// and of hermes.yaml (config.schema.json), generated from the YAML-shape
// types in this file with github.com/invopop/jsonschema.
//
// The units package decodes YAML itself (to report file:line:col); these
// types mirror the keys it accepts, with the patterns, enums and
// descriptions editors show. A test checks that the two accept exactly the
// same keys, and another that the checked-in files match the generator:
// after changing a type here, run `go generate ./schema`.
package schema

import "github.com/invopop/jsonschema"

//go:generate go run ./gen

// UnitFile is the YAML shape of one unit file (SPEC §5).
type UnitFile struct {
	Description     string            `json:"description,omitempty" jsonschema_description:"What the unit is, for status output."`
	Type            string            `json:"type,omitempty" jsonschema:"enum=simple,enum=oneshot,enum=forking,default=simple" jsonschema_description:"simple: up while the program runs in the foreground. oneshot: a step, done when it exits 0 (after: dependents start only then). forking: the program daemonizes and exits 0; the unit is up while the daemon runs (main pid from pid_file, or the one process left)."`
	Command         []Arg             `json:"command,omitempty" jsonschema:"minItems=1" jsonschema_description:"The program and its arguments, run directly (no shell). Exclusive with shell."`
	Shell           string            `json:"shell,omitempty" jsonschema:"minLength=1" jsonschema_description:"A command line run by /bin/sh -c. Exclusive with command."`
	PIDFile         string            `json:"pid_file,omitempty" jsonschema:"minLength=1" jsonschema_description:"type: forking only. The file where the daemon writes its main pid; ~ and paths relative to the unit file are expanded. The pid must be in the unit's group. Default: the one process left after the launcher exits."`
	RemainAfterExit bool              `json:"remain_after_exit,omitempty" jsonschema:"default=false" jsonschema_description:"type: oneshot only. Once done, the unit counts as active: hermesctl start does not run it again until it is stopped."`
	Workdir         string            `json:"workdir,omitempty" jsonschema:"minLength=1" jsonschema_description:"Working directory; ~ and paths relative to the unit file are expanded. Default: the units directory."`
	Env             map[string]Scalar `json:"env,omitempty" jsonschema_description:"Extra environment variables; they replace those of env_file."`
	Exec
	Ownership        string            `json:"ownership,omitempty" jsonschema:"enum=owned,enum=adoptable,enum=persist_on_release,default=owned" jsonschema_description:"owned: dies with its owner. adoptable: survives a gateway and is re-adopted. persist_on_release: survives any owner. Non-owned units need a reason."`
	Reason           string            `json:"reason,omitempty" jsonschema_description:"Why this unit must outlive its owner; required unless ownership is owned."`
	Restart          string            `json:"restart,omitempty" jsonschema:"enum=no,enum=on-failure,enum=always,default=on-failure" jsonschema_description:"Restart policy. A job (schedule) cannot use always."`
	RestartSec       DurationOrSeconds `json:"restart_sec,omitempty" jsonschema_description:"First restart backoff; doubles up to restart_max_sec. Default 1s."`
	RestartMaxSec    DurationOrSeconds `json:"restart_max_sec,omitempty" jsonschema_description:"Longest restart backoff. Default 30s."`
	StartLimit       *StartLimit       `json:"start_limit,omitempty"`
	After            []UnitName        `json:"after,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"Start after these units are ready."`
	Requires         []UnitName        `json:"requires,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"Stop this unit when one of these stops or fails."`
	Ready            *Ready            `json:"ready,omitempty"`
	Timeouts         *Timeouts         `json:"timeouts,omitempty"`
	StopSignal       Signal            `json:"stop_signal,omitempty" jsonschema_description:"Signal that asks the unit to stop. Default TERM."`
	ReloadSignal     Signal            `json:"reload_signal,omitempty" jsonschema_description:"hermesctl reload UNIT sends this signal to the unit's main process (nginx, many daemons: HUP). Exclusive with reload."`
	Reload           []Arg             `json:"reload,omitempty" jsonschema:"minItems=1" jsonschema_description:"hermesctl reload UNIT runs this command (no shell) in the unit's directory, environment and identity, with MAINPID set; the reload succeeds when it exits 0. Exclusive with reload_signal."`
	Ports            []Port            `json:"ports,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"TCP ports the unit listens on, checked free before start."`
	Log              *Log              `json:"log,omitempty"`
	Schedule         Schedule          `json:"schedule,omitempty"`
	RunBudgetSeconds Seconds           `json:"run_budget_seconds,omitempty" jsonschema_description:"Jobs: the longest a run may take; a wrap-up notice at 80%, stopped at 100%."`
	WrapupSignal     Signal            `json:"wrapup_signal,omitempty" jsonschema_description:"Jobs: a signal sent at 80% of run_budget_seconds."`
	Provider         *UnitProvider     `json:"provider,omitempty"`
	ProxyEnv         bool              `json:"proxy_env,omitempty" jsonschema:"default=false" jsonschema_description:"Give the unit OPENAI_BASE_URL and OPENAI_API_KEY (the proxy token) for hermesd's provider proxy. Jobs always get them."`
}

// JSONSchemaExtend adds the rules between keys that the loader checks too.
func (UnitFile) JSONSchemaExtend(s *jsonschema.Schema) {
	s.OneOf = []*jsonschema.Schema{{Required: []string{"command"}}, {Required: []string{"shell"}}}
	s.AllOf = []*jsonschema.Schema{
		{ // every survivor has a written reason
			If:   &jsonschema.Schema{Required: []string{"ownership"}, Properties: props("ownership", &jsonschema.Schema{Enum: []any{"adoptable", "persist_on_release"}})},
			Then: &jsonschema.Schema{Required: []string{"reason"}, Properties: props("reason", &jsonschema.Schema{Pattern: `\S`})},
		},
		{ // a job is not restarted on success
			If:   &jsonschema.Schema{Required: []string{"schedule"}},
			Then: &jsonschema.Schema{Properties: props("restart", &jsonschema.Schema{Not: &jsonschema.Schema{Const: "always"}})},
		},
		{ // pid_file is a forking unit's
			If:   &jsonschema.Schema{Required: []string{"pid_file"}},
			Then: &jsonschema.Schema{Required: []string{"type"}, Properties: props("type", &jsonschema.Schema{Const: "forking"})},
		},
		{ // remain_after_exit is a oneshot's
			If:   &jsonschema.Schema{Required: []string{"remain_after_exit"}},
			Then: &jsonschema.Schema{Required: []string{"type"}, Properties: props("type", &jsonschema.Schema{Const: "oneshot"})},
		},
		{ // one way to reload
			If:   &jsonschema.Schema{Required: []string{"reload_signal"}},
			Then: &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"reload"}}},
		},
		{ // a oneshot is done when it exits 0: no probe, never restarted on success
			If: &jsonschema.Schema{Required: []string{"type"}, Properties: props("type", &jsonschema.Schema{Const: "oneshot"})},
			Then: &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"ready"}},
				Properties: props("restart", &jsonschema.Schema{Not: &jsonschema.Schema{Const: "always"}})},
		},
	}
	s.DependentRequired = map[string][]string{
		"run_budget_seconds": {"schedule"},
		"wrapup_signal":      {"run_budget_seconds"},
	}
}

// StartLimit bounds restarts.
type StartLimit struct {
	Burst    int      `json:"burst,omitempty" jsonschema:"minimum=1,maximum=1000,default=5" jsonschema_description:"Most starts within interval before the unit is left failed."`
	Interval Duration `json:"interval,omitempty" jsonschema_description:"Default 60s."`
}

// Ready is a unit's readiness probe: at most one.
type Ready struct {
	TCP    string `json:"tcp,omitempty" jsonschema:"pattern=^.+:[0-9]+$" jsonschema_description:"host:port that accepts a connection."`
	HTTP   string `json:"http,omitempty" jsonschema:"pattern=^https?://[^/]+" jsonschema_description:"URL that answers 2xx."`
	Notify bool   `json:"notify,omitempty" jsonschema_description:"Ready when the unit sends READY=1 on NOTIFY_SOCKET (sd_notify)."`
	Log    string `json:"log,omitempty" jsonschema:"minLength=1" jsonschema_description:"Regular expression matched against output lines."`
}

// JSONSchemaExtend allows one probe.
func (Ready) JSONSchemaExtend(s *jsonschema.Schema) {
	one := uint64(1)
	s.MaxProperties = &one
	s.Description = "When a started unit counts as ready; at most one probe. None: ready once running."
}

// Timeouts of a unit.
type Timeouts struct {
	Start      Duration `json:"start,omitempty" jsonschema_description:"Longest wait for readiness. Default 90s."`
	Stop       Duration `json:"stop,omitempty" jsonschema_description:"Grace between the stop signal and KILL. Default 3s."`
	RuntimeMax Duration `json:"runtime_max,omitempty" jsonschema_description:"Stop the unit after this long; 0s: never."`
	Watchdog   Duration `json:"watchdog,omitempty" jsonschema_description:"Restart when no WATCHDOG=1 arrives within this; 0s: off."`
}

// Log is where a unit's output goes.
type Log struct {
	Path    string `json:"path,omitempty" jsonschema:"minLength=1" jsonschema_description:"Log file; default <state>/logs/<unit>.log."`
	MaxSize Size   `json:"max_size,omitempty" jsonschema_description:"Rotate above this size. Default 10MiB."`
	Keep    *int   `json:"keep,omitempty" jsonschema:"minimum=0,maximum=100,default=3" jsonschema_description:"Rotated files kept."`
}

// Provider is an LLM endpoint under providers.<id> in hermes.yaml.
type Provider struct {
	BaseURL             string           `json:"base_url,omitempty" jsonschema:"pattern=^https?://[^/]+" jsonschema_description:"OpenAI-compatible base URL, like http://127.0.0.1:8080/v1."`
	APIKeyEnv           string           `json:"api_key_env,omitempty" jsonschema:"pattern=^[^=$ ]+$" jsonschema_description:"Name of the environment variable holding the API key (not the key)."`
	APIKeyFile          string           `json:"api_key_file,omitempty" jsonschema:"minLength=1" jsonschema_description:"File holding the API key (a mounted Kubernetes Secret, a Docker secret), read at each call; instead of api_key_env."`
	StaleTimeoutSeconds Seconds          `json:"stale_timeout_seconds,omitempty" jsonschema_description:"Explicit stale timeout: beats floors and tiers."`
	Models              map[string]Model `json:"models,omitempty" jsonschema_description:"Per-model settings, by model id."`
	Tiers               []Tier           `json:"tiers,omitempty" jsonschema_description:"Context tiers replacing the defaults."`
	Floors              []Floor          `json:"floors,omitempty" jsonschema_description:"Extra model floors."`
}

// UnitProvider is a unit's provider: block: the unit serves this endpoint.
type UnitProvider struct {
	ID string `json:"id" jsonschema:"required,minLength=1" jsonschema_description:"Provider id the proxy routes to."`
	Provider
}

// JSONSchemaExtend makes base_url required in a unit.
func (UnitProvider) JSONSchemaExtend(s *jsonschema.Schema) { s.Required = []string{"id", "base_url"} }

// Model holds per-model settings.
type Model struct {
	StaleTimeoutSeconds Seconds `json:"stale_timeout_seconds,omitempty"`
}

// Tier raises implicit stale timeouts above a context size.
type Tier struct {
	AboveTokens int     `json:"above_tokens" jsonschema:"required,minimum=1,maximum=100000000"`
	Seconds     Seconds `json:"seconds" jsonschema:"required"`
}

// Floor is a model floor.
type Floor struct {
	Slug    string  `json:"slug" jsonschema:"required,minLength=1"`
	Seconds Seconds `json:"seconds" jsonschema:"required"`
}

// ConfigFile is the YAML shape of hermes.yaml (SPEC §7, §10).
type ConfigFile struct {
	Units     string              `json:"units,omitempty" jsonschema:"minLength=1" jsonschema_description:"Units directory (flag --units, env HERMES_UNITS)."`
	State     string              `json:"state,omitempty" jsonschema:"minLength=1" jsonschema_description:"State directory (flag --state, env HERMES_STATE)."`
	Socket    string              `json:"socket,omitempty" jsonschema:"minLength=1" jsonschema_description:"Control socket (flag --socket, env HERMES_SOCKET)."`
	Role      string              `json:"role,omitempty" jsonschema:"enum=gateway,enum=worker,default=gateway" jsonschema_description:"gateway re-adopts survivors; worker does not."`
	Agent     *Agent              `json:"agent,omitempty"`
	Providers map[string]Provider `json:"providers,omitempty" jsonschema_description:"LLM providers by id."`
	Gateway   *Gateway            `json:"gateway,omitempty"`
	Metrics   *Metrics            `json:"metrics,omitempty"`
	Probes    *Probes             `json:"probes,omitempty"`
	Defaults  *Defaults           `json:"defaults,omitempty"`
}

// Agent holds agent.* settings.
type Agent struct {
	RunBudgetSeconds        Seconds           `json:"run_budget_seconds,omitempty" jsonschema_description:"Budget of a run: wrap-up notice at 80%, implicit stale timeouts capped at half the remainder."`
	LocalStreamStaleTimeout DurationOrSeconds `json:"local_stream_stale_timeout,omitempty" jsonschema_description:"Stale-stream ceiling for local endpoints at implicit defaults. Default 900."`
	StaleTimeoutHardCap     DurationOrSeconds `json:"stale_timeout_hard_cap,omitempty" jsonschema_description:"Caps implicit stale timeouts on every path."`
	StreamDrainTimeout      DurationOrSeconds `json:"stream_drain_timeout,omitempty" jsonschema_description:"Post-terminal drain. Default 2."`
}

// Gateway holds gateway.* settings.
type Gateway struct {
	Listen            string            `json:"listen,omitempty" jsonschema:"pattern=^.*:[0-9]+$,default=127.0.0.1:7411" jsonschema_description:"Provider proxy address."`
	AllowedOrigins    []string          `json:"allowed_origins,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"Browser origins (scheme://host[:port]) allowed to call the proxy; a request with any other Origin header is refused 403. Default none."`
	MaxConnections    int               `json:"max_connections,omitempty" jsonschema:"minimum=1,default=512" jsonschema_description:"Client connections open at once; the next is answered 503 and closed. Lowered at start to fit the descriptor limit."`
	MaxRequestBody    Size              `json:"max_request_body,omitempty" jsonschema_description:"Largest request body (413 above). Default 64MiB."`
	MaxBodiesInFlight Size              `json:"max_bodies_in_flight,omitempty" jsonschema_description:"Request body bytes held by all requests at once; at least max_request_body. Default 256MiB."`
	ReadHeaderTimeout DurationOrSeconds `json:"read_header_timeout,omitempty" jsonschema_description:"Time to read a request's headers. Default 30s."`
	BodyReadTimeout   DurationOrSeconds `json:"body_read_timeout,omitempty" jsonschema_description:"Time to read a request's body once its headers are in. Default 60s."`
	IdleTimeout       DurationOrSeconds `json:"idle_timeout,omitempty" jsonschema_description:"How long a kept-alive client connection may wait for its next request. Default 120s."`
}

// Metrics holds metrics.* settings.
type Metrics struct {
	Listen    string `json:"listen,omitempty" jsonschema:"pattern=^.*:[0-9]+$" jsonschema_description:"Address of the Prometheus metrics endpoint (/metrics). Off unless set. Loopback unless remote is true."`
	TokenFile string `json:"token_file,omitempty" jsonschema:"minLength=1" jsonschema_description:"File holding the bearer token a scrape must send (Authorization: Bearer …). No token when unset."`
	Remote    bool   `json:"remote,omitempty" jsonschema_description:"Allow a listen address that is not loopback (the pod IP, 0.0.0.0), where a cluster's Prometheus scrapes, and requests whose Host is not loopback. Default false; set token_file with it."`
}

// Probes holds probes.* settings.
type Probes struct {
	Listen string `json:"listen,omitempty" jsonschema:"pattern=^.*:[0-9]+$" jsonschema_description:"Address of the liveness (/livez) and readiness (/readyz) endpoints. Off unless set. Loopback unless remote is true."`
	Remote bool   `json:"remote,omitempty" jsonschema_description:"Allow a listen address that is not loopback (the pod IP, 0.0.0.0), where a kubelet's HTTP probes come from. Default false."`
}

// Defaults are unit fields applied where a unit leaves them unset.
type Defaults struct {
	Restart       string            `json:"restart,omitempty" jsonschema:"enum=no,enum=on-failure,enum=always"`
	RestartSec    DurationOrSeconds `json:"restart_sec,omitempty"`
	RestartMaxSec DurationOrSeconds `json:"restart_max_sec,omitempty"`
	StartLimit    *StartLimit       `json:"start_limit,omitempty"`
	Timeouts      *Timeouts         `json:"timeouts,omitempty"`
	StopSignal    Signal            `json:"stop_signal,omitempty"`
	Log           *DefaultsLog      `json:"log,omitempty"`
	Exec
}

// Exec is how a unit's processes run: as whom, with which limits and
// environment files; in a unit file and in defaults: (a unit's key
// replaces the default's; limits: merge by resource).
type Exec struct {
	EnvFile             EnvFiles    `json:"env_file,omitempty" jsonschema_description:"Files of KEY=value lines read when the unit starts, as systemd's EnvironmentFile= and docker's env_file (comments, blank lines, export, quotes); ~ and paths relative to the unit file (to hermes.yaml under defaults:) are expanded. A leading - marks a file that may be missing; a missing one without it fails the start. A later file's variable replaces an earlier one's."`
	User                Principal   `json:"user,omitempty" jsonschema_description:"User the unit's processes run as (a name or uid). Needs hermesd to run as root. Default: hermesd's user."`
	Group               Principal   `json:"group,omitempty" jsonschema_description:"Group they run as (a name or gid). Needs hermesd to run as root. Default: the user's primary group."`
	SupplementaryGroups []Principal `json:"supplementary_groups,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"Supplementary groups (names or gids); [] for none. Needs hermesd to run as root. Default: the user's groups from the group database, as systemd's User=."`
	Umask               Umask       `json:"umask,omitempty"`
	Nice                *int        `json:"nice,omitempty" jsonschema:"minimum=-20,maximum=19" jsonschema_description:"Scheduling niceness, -20 (first) to 19 (last). Default: hermesd's."`
	Limits              *Limits     `json:"limits,omitempty"`
	MemoryMax           Size        `json:"memory_max,omitempty" jsonschema_description:"cgroup mode: memory.max of the unit's cgroup, where the memory controller is delegated (a warning names it where not)."`
	CPUWeight           int         `json:"cpu_weight,omitempty" jsonschema:"minimum=1,maximum=10000" jsonschema_description:"cgroup mode: cpu.weight of the unit's cgroup (the kernel's default is 100), where the cpu controller is delegated."`
	CPUMax              Percent     `json:"cpu_max,omitempty" jsonschema_description:"cgroup mode: cpu.max of the unit's cgroup as a percentage of one CPU (\"150%\" is one and a half), where the cpu controller is delegated."`
	TasksMax            int         `json:"tasks_max,omitempty" jsonschema:"minimum=1,maximum=4194304" jsonschema_description:"cgroup mode: pids.max of the unit's cgroup, where the pids controller is delegated."`
}

// Limits are resource limits (setrlimit), one key a resource, as systemd's
// Limit*= keys (LimitNOFILE= is nofile).
type Limits struct {
	AS         Rlimit `json:"as,omitempty" jsonschema_description:"Address space, bytes."`
	Core       Rlimit `json:"core,omitempty" jsonschema_description:"Core file size, bytes."`
	CPU        Rlimit `json:"cpu,omitempty" jsonschema_description:"CPU time, seconds."`
	Data       Rlimit `json:"data,omitempty" jsonschema_description:"Data segment, bytes."`
	FSize      Rlimit `json:"fsize,omitempty" jsonschema_description:"File size, bytes."`
	Locks      Rlimit `json:"locks,omitempty" jsonschema_description:"File locks."`
	Memlock    Rlimit `json:"memlock,omitempty" jsonschema_description:"Locked memory, bytes."`
	Msgqueue   Rlimit `json:"msgqueue,omitempty" jsonschema_description:"POSIX message queues, bytes."`
	Nice       Rlimit `json:"nice,omitempty" jsonschema_description:"Ceiling of the nice value (20 - nice)."`
	Nofile     Rlimit `json:"nofile,omitempty" jsonschema_description:"Open files."`
	Nproc      Rlimit `json:"nproc,omitempty" jsonschema_description:"Processes of the user."`
	RSS        Rlimit `json:"rss,omitempty" jsonschema_description:"Resident set, bytes."`
	RTPrio     Rlimit `json:"rtprio,omitempty" jsonschema_description:"Real-time priority ceiling."`
	RTTime     Rlimit `json:"rttime,omitempty" jsonschema_description:"Real-time CPU time, microseconds."`
	Sigpending Rlimit `json:"sigpending,omitempty" jsonschema_description:"Queued signals."`
	Stack      Rlimit `json:"stack,omitempty" jsonschema_description:"Stack size, bytes."`
}

// JSONSchemaExtend describes the block.
func (Limits) JSONSchemaExtend(s *jsonschema.Schema) {
	s.Description = "Resource limits, by resource; a resource not set keeps hermesd's."
}

// DefaultsLog are the log rotation defaults (no path: each unit has its own).
type DefaultsLog struct {
	MaxSize Size `json:"max_size,omitempty"`
	Keep    *int `json:"keep,omitempty" jsonschema:"minimum=0,maximum=100"`
}
