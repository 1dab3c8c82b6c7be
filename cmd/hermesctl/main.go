// Command hermesctl steers hermesd and runs the offline commands (run,
// validate, who, timeouts explain) that need no daemon.
//
// Exit codes (named in internal/exitcode):
//
//	0    done; status: every unit named is active (none named: every unit
//	     is active or at rest on purpose, and every unit file loaded)
//	1    failure; status with no unit named: a unit file did not load;
//	     is-active: some unit is not active; is-failed: no unit is failed;
//	     is-enabled: some unit is disabled or masked
//	2    usage: a bad flag, argument or path setting
//	3    status: a unit is not active (LSB: program is not running); any
//	     command: hermesd does not answer within 5 s (stopped, wedged)
//	4    status, show: a unit named is unknown to hermesd (LSB: status
//	     unknown)
//	124  run --run-budget: the budget ran out; CMD's group was stopped
//	126  run: the program cannot be executed
//	127  run: the program is not found
//
// run otherwise exits with its child's status (128+N when signal N killed it).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/internal/exitcode"
)

func main() {
	os.Exit(report(execute(newRoot()), os.Stderr))
}

// report prints err on w once, as a "hermesctl: …" line of its summary
// with its detail (what to do: diag.Split, hermesd's as it sent them)
// indented below, and returns the status to exit with: 0 for nil, an
// exitError's code, else exitcode.Failure. A bare exit status (an
// exitError with no message) prints nothing.
func report(err error, w io.Writer) int {
	if err == nil {
		return exitcode.Success
	}
	if ee, ok := err.(*exitError); ok && ee.err == nil {
		return ee.code
	}
	summary, detail := diag.Split(err)
	fmt.Fprintln(w, "hermesctl:", inert(summary))
	if detail != "" {
		fmt.Fprintln(w, "  "+strings.ReplaceAll(inert(detail), "\n", "\n  "))
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return exitcode.Failure
}
