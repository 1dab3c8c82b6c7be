package units

// The keys each YAML block accepts, in the order the canonical rendering
// writes them. The decoder rejects any other key; a test checks that the
// schema mirror (shape.go) declares exactly these, so they cannot drift.
var (
	unitKeys = []string{
		"description", "command", "shell", "workdir", "env", "ownership", "reason",
		"restart", "restart_sec", "restart_max_sec", "start_limit", "after", "requires",
		"ready", "timeouts", "stop_signal", "ports", "log", "schedule",
		"run_budget_seconds", "wrapup_signal", "provider",
	}
	startLimitKeys  = []string{"burst", "interval"}
	readyKeys       = []string{"tcp", "http", "notify", "log"}
	timeoutsKeys    = []string{"start", "stop", "runtime_max", "watchdog"}
	logKeys         = []string{"path", "max_size", "keep"}
	unitProvKeys    = []string{"id", "base_url", "api_key_env", "stale_timeout_seconds", "models", "tiers", "floors"}
	providerKeys    = []string{"base_url", "api_key_env", "stale_timeout_seconds", "models", "tiers", "floors"}
	modelKeys       = []string{"stale_timeout_seconds"}
	tierKeys        = []string{"above_tokens", "seconds"}
	floorKeys       = []string{"slug", "seconds"}
	configKeys      = []string{"units", "state", "socket", "role", "agent", "providers", "gateway", "defaults"}
	agentKeys       = []string{"run_budget_seconds", "local_stream_stale_timeout", "stale_timeout_hard_cap", "stream_drain_timeout"}
	gatewayKeys     = []string{"listen"}
	defaultsKeys    = []string{"restart", "restart_sec", "restart_max_sec", "start_limit", "timeouts", "stop_signal", "log"}
	defaultsLogKeys = []string{"max_size", "keep"}
)
