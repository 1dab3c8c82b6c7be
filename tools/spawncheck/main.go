// Command spawncheck is the detached-spawn ratchet and the function-length
// ceiling, run by make lint:
//
//	go run ./tools/spawncheck .
//
// It parses every non-test .go file of the module and fails (exit 1),
// listing file:line and what it found, on any detached spawn outside the
// supervisor's own spawn code: Setsid, Setpgid, Setctty or Foreground set in
// a syscall.SysProcAttr literal or assigned, a use of unix/syscall Setsid or
// Setpgid, or running the setsid program. A line is waived when it, or the
// line above, carries the marker
//
//	// detached-spawn: ok — <why>
//
// (an em dash or "--", then a non-empty reason). The baseline is empty:
// every detached spawn is either the supervisor's or says why.
//
// It also fails on any function whose body runs over 100 lines between its
// braces (maxFuncLines), in every package: there is no waiver; split it.
package main

import (
	"fmt"
	"os"
)

func main() {
	root := "."
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: spawncheck [module-root]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		root = os.Args[1]
	}
	found, err := Check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawncheck:", err)
		os.Exit(2)
	}
	long, err := LongFuncs(root, maxFuncLines)
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawncheck:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Fprintln(os.Stderr, f)
	}
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "spawncheck: %d detached spawn(s) outside the supervisor\n", len(found))
	}
	for _, f := range long {
		fmt.Fprintln(os.Stderr, f)
	}
	if len(long) > 0 {
		fmt.Fprintf(os.Stderr, "spawncheck: %d function(s) over %d lines\n", len(long), maxFuncLines)
	}
	if len(found) > 0 || len(long) > 0 {
		os.Exit(1)
	}
}
