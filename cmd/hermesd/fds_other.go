//go:build !linux

package main

// cloexecInherited: see fds.go. There is no close_range here: one by one.
func cloexecInherited() error { return cloexecListed() }
