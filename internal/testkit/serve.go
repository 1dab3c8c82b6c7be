package testkit

import (
	"context"
	"net"
	"sync"
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

// Run runs run on a goroutine of its own until the returned stop is called
// or the test ends (its cleanup calls stop). stop cancels run's context,
// waits for run to return and returns its error, the same at every call;
// a test that minds the error calls stop itself, or checks it in a cleanup
// of its own (cleanups run last registered first).
func Run(t testing.TB, run func(context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-errc
	})
	t.Cleanup(func() { stop() })
	return stop
}

// FreePorts returns n distinct TCP ports of 127.0.0.1 that were free a
// moment ago: the kernel picks each for a listener, all held until the
// last is picked, then closed. A port drawn at random can be one a
// connection of the machine holds (the ephemeral range), and a server
// given it fails to start. No port is handed to two tests of this process
// at once: a port another test holds until its end is passed over (the
// kernel may pick a port again once its listener closed).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	var out []int
	for len(out) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if p := ln.Addr().(*net.TCPAddr).Port; !portsHeld[p] {
			portsHeld[p] = true
			out = append(out, p)
		}
	}
	t.Cleanup(func() {
		portsMu.Lock()
		defer portsMu.Unlock()
		for _, p := range out {
			delete(portsHeld, p)
		}
	})
	return out
}

// portsHeld are the ports FreePorts handed to tests that have not ended.
var (
	portsMu   sync.Mutex
	portsHeld = map[int]bool{}
)
