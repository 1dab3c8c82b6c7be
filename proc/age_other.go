//go:build !linux && !darwin

package proc

import "time"

// Age is unsupported here: there is no start time to count from.
func (id Identity) Age() (time.Duration, error) { return 0, unsupportedTable() }

// AgeClock is a reading of no clock here.
type AgeClock struct{}

// ReadAgeClock reads nothing here.
func ReadAgeClock() AgeClock { return AgeClock{} }

// AgeAt is unsupported here, as Age.
func (id Identity) AgeAt(AgeClock) (time.Duration, error) { return 0, unsupportedTable() }

// Started is the zero time here: there is no start time to convert.
func Started(uint64) time.Time { return time.Time{} }
