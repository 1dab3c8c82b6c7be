// Command hermesd is the gateway: it keeps the units of a directory running,
// re-adopts the survivors of a previous gateway, serves the control API for
// hermesctl and a NOTIFY_SOCKET for its units, serves the provider proxy on
// gateway.listen when a provider is configured, Prometheus metrics on
// metrics.listen when set, and stops cleanly on TERM or
// INT (owned units stopped, survivors left running and recorded).
//
// Flags (each also HERMES_* env and a top-level key of hermes.yaml; flag >
// env > file > default): --config, --units, --state, --socket,
// --role gateway|worker, --insecure-units. The hidden flag
// --supervisor-mode cgroup|pgroup (env HERMES_SUPERVISOR_MODE, no file key)
// forces the containment mode; by default it is cgroup where a writable
// cgroup v2 hierarchy exists, else pgroup.
//
// Exit codes (named in internal/exitcode):
//
//	0  clean stop (TERM or INT)
//	1  runtime failure
//	2  usage or configuration error (bad flag, role, config file, units directory)
//	3  the state directory is locked by another hermesd
//	4  the control socket is served by another daemon, or unsafe
//	5  the provider proxy cannot listen on gateway.listen (address in use, or not loopback)
//	6  metrics cannot be served on metrics.listen (address in use, not loopback, or an unusable metrics.token_file)
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/hermes-units/hermes/internal/exitcode"
)

func main() { os.Exit(exitCode(run(os.Args[1:]))) }

// exitCode prints run's error once (unless the daemon reported it) and
// returns the exit code it carries: Failure for one that carries none.
func exitCode(err error) int {
	if err == nil {
		return exitcode.Success
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintln(os.Stderr, "hermesd:", err)
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return exitcode.Failure
}
