// Package paths resolves the files and directories that hermesd and
// hermesctl share, so that both agree on every path without a running daemon.
//
// Precedence is flag > env (HERMES_CONFIG, HERMES_UNITS, HERMES_STATE,
// HERMES_SOCKET) > file > default; the defaults follow the XDG base
// directory rules. The default control socket is in the user's runtime
// directory whether or not XDG_RUNTIME_DIR is set (SocketCandidates).
package paths

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
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
	p.Socket = SocketCandidates(p.State)[0]
	return p
}

// userRuntimeRoot holds the per-user runtime directories that systemd-logind
// (and elogind) create as /run/user/UID; a variable for tests only.
var userRuntimeRoot = "/run/user"

// SocketCandidates are the places of the default control socket, best
// first, for a user whose default state directory is state:
//
//  1. $XDG_RUNTIME_DIR/hermes/hermesd.sock, when XDG_RUNTIME_DIR is set;
//  2. /run/user/UID/hermes/hermesd.sock, when that directory exists, is a
//     directory of ours and nobody else may enter it: it is the runtime
//     directory XDG_RUNTIME_DIR names in a login session, so a hermesd
//     started where the variable is unset (cron, su, a service manager
//     without a session) picks the same socket as a shell where it is set;
//  3. STATE/hermesd.sock otherwise.
//
// The default (Defaults().Socket) is the first; hermesctl, when no socket
// was given, dials the first candidate that is a socket (FindSocket), so
// that it finds a hermesd whose environment differed from its own.
func SocketCandidates(state string) []string {
	var c []string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		c = append(c, filepath.Join(rt, "hermes", "hermesd.sock"))
	}
	if rt := filepath.Join(userRuntimeRoot, strconv.Itoa(os.Geteuid())); privateDir(rt) {
		if s := filepath.Join(rt, "hermes", "hermesd.sock"); !slices.Contains(c, s) {
			c = append(c, s)
		}
	}
	return append(c, filepath.Join(state, "hermesd.sock"))
}

// privateDir reports whether dir is a directory (not a link) owned by the
// effective user that group and others cannot write.
func privateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// FindSocket is the first of SocketCandidates(Defaults().State) that is a
// socket now, or def when none is: the control socket of a hermesd started
// with the default socket, whichever environment it had.
func FindSocket(def string) string {
	for _, c := range SocketCandidates(Defaults().State) {
		if fi, err := os.Stat(c); err == nil && fi.Mode().Type() == os.ModeSocket {
			return c
		}
	}
	return def
}

// Logs is the default log directory inside a state directory.
func Logs(state string) string { return filepath.Join(state, "logs") }
