//go:build !linux

package main

import "io"

// holdStateName is a no-op where there are no abstract Unix sockets
// (macOS, the BSDs): there the flock on hermesd.lock alone keeps a second
// hermesd out, and a state directory removed while hermesd runs lets one
// in (docs/security.md).
func holdStateName(string) (io.Closer, error) { return io.NopCloser(nil), nil }
