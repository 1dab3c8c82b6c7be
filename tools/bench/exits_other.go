//go:build !linux

package main

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// exitSet needs pidfds (exits_linux.go): the sections that time exits
// say they cannot run here.
type exitSet struct{}

func openExits([]int) (*exitSet, error) {
	return nil, fmt.Errorf("timing exits needs pidfds, which %s has not: %w", runtime.GOOS, errors.ErrUnsupported)
}

func (*exitSet) wait(time.Duration) (int, error) { return 0, errors.ErrUnsupported }

func (*exitSet) kill() {}

func (*exitSet) close() {}
