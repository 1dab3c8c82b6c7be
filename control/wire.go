package control

// Request and answer bodies besides those of api.go. Like Status, they are a
// stable contract: fields are added, never renamed.

// ReloadRequest is the body of POST /v1/reload.
type ReloadRequest struct {
	DryRun bool `json:"dry_run"`
}

// ActionResult answers POST /v1/units/{unit}/{start,stop,restart} once the
// backend has done it (for stop: once the group is empty).
type ActionResult struct {
	Unit   string `json:"unit"`
	Action string `json:"action"` // start | stop | restart
}

// LogInfo answers GET /v1/units/{unit}/log.
type LogInfo struct {
	Unit string `json:"unit"`
	Path string `json:"path"` // the unit's current log file; the client reads it directly
}
