package control

import (
	"context"
	"errors"
	"net/http"
)

// pathPaths serves the daemon's own files and directories (Paths).
const pathPaths = "/v1/paths"

// Paths answers GET /v1/paths: the files and directories the daemon
// resolved at its start (flag > HERMES_* env > hermes.yaml > default), all
// absolute. hermesctl reads the state and units directories of the daemon it
// talks to from here, so that the socket alone (HERMES_SOCKET) is enough for
// every command to agree with it. A stable contract like Status.
type Paths struct {
	Config string `json:"config"`    // hermes.yaml (it may not exist: it is optional)
	Units  string `json:"units_dir"` // the units directory
	State  string `json:"state_dir"` // ledger, default logs, lock
	Socket string `json:"socket"`    // the control socket it listens on
	Logs   string `json:"logs_dir"`  // the default directory of unit logs (log.path may name others)
}

func (s *Server) routePaths(mux *router) {
	mux.HandleFunc("GET "+pathPaths, func(w http.ResponseWriter, _ *http.Request) {
		if s.paths == (Paths{}) {
			writeBody(w, http.StatusNotFound, newErrorBody(errors.New("hermesd does not report its paths"), CodeNoRoute))
			return
		}
		writeJSON(w, s.paths)
	})
}

// Paths are the daemon's own files and directories. A daemon older than this
// API answers with an *Error of Code CodeNoRoute.
func (c *Client) Paths(ctx context.Context) (Paths, error) {
	var p Paths
	err := c.do(ctx, http.MethodGet, pathPaths, nil, &p)
	return p, err
}
