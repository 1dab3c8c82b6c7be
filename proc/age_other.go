//go:build !linux && !darwin

package proc

import "time"

// Age is unsupported here: there is no start time to count from.
func (id Identity) Age() (time.Duration, error) { return 0, unsupportedTable() }
