//go:build darwin || freebsd

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings: it fails on a descriptor
// that is no terminal, which is how hermesctl tells one.
const ioctlGetTermios = unix.TIOCGETA
