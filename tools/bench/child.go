package main

import (
	"fmt"
	"os"
)

// children maps a -child name to the function that plays it. Each section's
// file adds its own entries from an init function.
var children = map[string]func(args []string) int{}

func runChild(name string, args []string) int {
	f, ok := children[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown child %q\n", name)
		return 2
	}
	return f(args)
}
