// Package paths resolves the files and directories that hermesd and
// hermesctl share, so that both agree on every path without a running daemon.
//
// Precedence is flag > env (HERMES_CONFIG, HERMES_UNITS, HERMES_STATE,
// HERMES_SOCKET) > file > default; the defaults follow the XDG base
// directory rules.
package paths

import (
	"os"
	"path/filepath"
)

// Paths are the locations an owner and its client use.
type Paths struct {
	Config string // hermes.yaml; optional
	Units  string // the units directory
	State  string // ledger, logs, lock
	Socket string // the control socket
}

// Defaults returns the XDG defaults for the current user.
func Defaults() Paths {
	home, _ := os.UserHomeDir()
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		cfg = filepath.Join(home, ".config")
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	p := Paths{
		Config: filepath.Join(cfg, "hermes", "hermes.yaml"),
		Units:  filepath.Join(cfg, "hermes", "units"),
		State:  filepath.Join(state, "hermes"),
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		p.Socket = filepath.Join(rt, "hermes", "hermesd.sock")
	} else {
		p.Socket = filepath.Join(p.State, "hermesd.sock")
	}
	return p
}

// Ledger is the spawn ledger's path inside a state directory.
func Ledger(state string) string { return filepath.Join(state, "ledger.json") }

// Logs is the default log directory inside a state directory.
func Logs(state string) string { return filepath.Join(state, "logs") }
