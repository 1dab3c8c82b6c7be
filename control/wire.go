package control

// Request and answer bodies besides those of api.go. Like Status, they are a
// stable contract: fields are added, never renamed.

// ReloadRequest is the body of POST /v1/reload.
type ReloadRequest struct {
	DryRun bool `json:"dry_run"`
}

// Action is what POST /v1/units/{unit}/{action} asks of a unit.
type Action string

// The actions on a unit.
const (
	ActionStart   Action = "start"
	ActionStop    Action = "stop"
	ActionRestart Action = "restart"
)

// ActionResult answers POST /v1/units/{unit}/{start,stop,restart} once the
// backend has done it (for stop: once the group is empty). A start or a
// restart answers once the unit is started, not once it is ready: a client
// that waits for the outcome follows the event stream and status (as
// `hermesctl start` does).
type ActionResult struct {
	Unit   string `json:"unit"`
	Action string `json:"action"` // start | stop | restart | disable | enable | kill | reload | reset-failed | mask | unmask
	// Stopped (stop): the units that require Unit, directly or through
	// one another, which the stop took down with it, in the order they
	// start; their groups are empty too. They start again with Unit.
	Stopped []string `json:"stopped,omitempty"`
	// RunID (start or restart of a job): the run the action began, or the
	// run already under way that it found. That run has ended once status
	// shows the job's run_id changed or its result other than running.
	RunID string `json:"run_id,omitempty"`
}

// LogInfo answers GET /v1/units/{unit}/log.
type LogInfo struct {
	Unit string `json:"unit"`
	Path string `json:"path"` // the unit's current log file; the client reads it directly
}

// VersionInfo answers GET /v1/version: the daemon's build (package
// internal/version of this module fills it).
type VersionInfo struct {
	Version  string `json:"version"`            // module version: "v1.2.3", or "(devel)" for a build in a checkout
	Revision string `json:"revision,omitempty"` // VCS revision it was built from
	Time     string `json:"time,omitempty"`     // the revision's commit time
	Modified bool   `json:"modified,omitempty"` // built from a checkout with uncommitted changes
	Go       string `json:"go,omitempty"`       // Go toolchain
}
