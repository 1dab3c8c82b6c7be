//go:build !linux

package ledger

import (
	"fmt"
	"os"

	"github.com/hermes-units/hermes/proc"
)

// No line here: the kernel has no open file description locks (see
// queue.go), so enqueue hands out the zero ticket and none of these is
// called; they say so if one is.

const ofdLocks = false

func errNoLine() error {
	return fmt.Errorf("ledger queue: %w", &proc.UnsupportedError{What: "open file description locks", Why: "fcntl locks here belong to the process; writers contend for the flock without a line"})
}

func lockTicket(*os.File, int64) error { return errNoLine() }

func waitTicket(*os.File, int64) error { return errNoLine() }

func ticketTaken(*os.File, int64) bool { return false }
