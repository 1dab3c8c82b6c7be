//go:build !linux && !darwin && !freebsd

package control

import (
	"errors"
	"fmt"
	"runtime"
)

// peerCredentials is unsupported here: without the peer's uid no
// connection is admitted.
func peerCredentials(int) (peer, error) {
	return peer{}, fmt.Errorf("peer credentials of a Unix socket on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
