package testkit

import (
	"net"
	"testing"
)

// Serve accepts on ln until ln is closed, handing each connection to
// handle (nil: none) and closing it after, one at a time. stop closes ln
// and waits for the accept loop to return; it may be called more than
// once, and t's cleanup calls it.
func Serve(t testing.TB, ln net.Listener, handle func(net.Conn)) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if handle != nil {
				handle(c)
			}
			c.Close()
		}
	}()
	stop = func() {
		ln.Close()
		<-done
	}
	t.Cleanup(stop)
	return stop
}
