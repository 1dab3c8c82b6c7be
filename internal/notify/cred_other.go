//go:build !linux

package notify

import (
	"errors"
	"fmt"
	"runtime"
)

// No sender credentials on a datagram here (see the package doc): Listen
// fails in passCredentials, so Run never receives.

const oobSize = 0

func passCredentials(int) error {
	return fmt.Errorf("the sender's pid on a datagram (SCM_CREDENTIALS) is Linux's; on %s a unit cannot use sd_notify: %w", runtime.GOOS, errors.ErrUnsupported)
}

func credentials([]byte) (Message, bool) { return Message{}, false }
