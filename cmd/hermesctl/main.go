// Command hermesctl steers hermesd and runs the offline commands (run,
// validate, who, timeouts explain) that need no daemon.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	err := newRoot().Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "hermesctl:", inert(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(1)
}
