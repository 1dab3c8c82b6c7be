package fdreserve

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// lowestFree is the lowest descriptor number free now.
func lowestFree(t *testing.T) int {
	t.Helper()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return int(f.Fd())
}

// serve accepts on l until it fails, sending each connection kept to kept.
func serve(l net.Listener, kept chan<- net.Conn) {
	for {
		c, err := l.Accept()
		if err != nil {
			close(kept)
			return
		}
		kept <- c
	}
}

// dial connects to ln, failing t at once; cleanup closes the connection.
func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedSoon reports whether the listener closes c within 10 s: a read of
// it fails, and not for the deadline.
func closedSoon(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// roomAfter checks that the listener has refused one connection in all,
// and that once free, a kept connection, is closed, the next one is kept.
func roomAfter(t *testing.T, r *Reserve, ln net.Listener, kept <-chan net.Conn, free net.Conn) {
	t.Helper()
	if r.Refused() != 1 {
		t.Errorf("refused %d, want 1", r.Refused())
	}
	free.Close()
	dial(t, ln)
	select {
	case c := <-kept:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Error("a connection after a kept one closed was not kept")
	}
}

// TestListenerKeepsReserve: a connection that would hold a descriptor at
// or above the reserve's limit (less the listener's Keep) is closed as it
// is accepted; those under it are kept; the count is reported.
func TestListenerKeepsReserve(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var r Reserve
	// The limit sits a few descriptors above those open now: the client
	// ends of the connections take numbers too.
	const room, reserve, keep = 24, 100, 4
	r.Set(uint64(lowestFree(t)+room+reserve), reserve)
	kept := make(chan net.Conn, 64)
	go serve(r.Listener(ln, "test", Limits{Keep: keep}, t.Logf), kept)
	// One dial at a time, each waited for until it is kept or refused:
	// were the dials made all at once, the clients' ends could take every
	// number under the limit before the first accept, and none be kept.
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var n int
	for i := range 40 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		deadline := time.After(10 * time.Second)
		for r.Refused()+int64(n) < int64(i+1) {
			select {
			case c := <-kept:
				n++
				fd, err := descriptor(c)
				if err != nil {
					t.Fatal(err)
				}
				if int64(fd) >= r.Limit()-keep {
					t.Errorf("kept a connection on descriptor %d, at or above the limit %d less %d", fd, r.Limit(), keep)
				}
				defer c.Close()
			case <-deadline:
				t.Fatalf("after 10 s: %d kept, %d refused of %d", n, r.Refused(), i+1)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if n == 0 || r.Refused() == 0 {
		t.Errorf("%d kept, %d refused, want some of each", n, r.Refused())
	}
	ln.Close()
}

// TestListenerMaxConns: over Limits.MaxConns, a connection is closed as it
// is accepted; closing one kept makes room again. A kept connection is
// still a syscall.Conn.
func TestListenerMaxConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var r Reserve
	l := r.Listener(ln, "test", Limits{MaxConns: 2}, t.Logf)
	kept := make(chan net.Conn, 8)
	go serve(l, kept)
	dial(t, ln)
	dial(t, ln)
	a, b := <-kept, <-kept
	if _, err := descriptor(a); err != nil {
		t.Errorf("a kept connection has no descriptor: %v", err)
	}
	if !closedSoon(dial(t, ln)) {
		t.Error("the third connection was not closed")
	}
	roomAfter(t, &r, ln, kept, a)
	b.Close()
}

// TestOwnerListener: a listener marked Owner is held to the soft limit
// less OwnerRoom, not to the reserve: with a reserve that leaves the
// listeners nothing (units hold more than it leaves), its connections
// are kept while a listener under the reserve closes every one.
func TestOwnerListener(t *testing.T) {
	var r Reserve
	r.Set(uint64(lowestFree(t)+OwnerRoom+200), 1<<20) // a reserve over the limit: every descriptor kept for units
	for _, tc := range []struct {
		lim  Limits
		kept bool
	}{{Limits{}, false}, {Limits{Owner: true}, true}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		kept := make(chan net.Conn, 4)
		go serve(r.Listener(ln, "test", tc.lim, t.Logf), kept)
		before := r.Refused()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case k := <-kept:
				k.Close()
				if !tc.kept {
					t.Errorf("%+v: kept a connection under a reserve that leaves nothing", tc.lim)
				}
				break wait
			case <-deadline:
				t.Errorf("%+v: no connection kept nor refused after 10 s", tc.lim)
				break wait
			case <-time.After(10 * time.Millisecond):
				if r.Refused() > before {
					if tc.kept {
						t.Errorf("%+v: refused a connection under the limit less OwnerRoom", tc.lim)
					}
					break wait
				}
			}
		}
		c.Close()
		ln.Close()
	}
}

// TestOwnerKeepsFew: once the units hold every descriptor under the soft
// limit less OwnerRoom (so that each connection comes above it), an Owner
// listener still keeps OwnerConns connections at once, and closes the one
// past them; one closed makes room for the next. Before, it closed every
// one: hermesd short of descriptors could not say why its units failed.
func TestOwnerKeepsFew(t *testing.T) {
	var r Reserve
	r.Set(OwnerRoom+1, 1<<20) // soft less OwnerRoom is 1: every descriptor is above it
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	kept := make(chan net.Conn, OwnerConns+1)
	go serve(r.Listener(ln, "control", Limits{Owner: true}, t.Logf), kept)
	var held []net.Conn
	for range OwnerConns {
		dial(t, ln)
		select {
		case k := <-kept:
			held = append(held, k)
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d of the owner's %d was not kept (refused: %d)", len(held)+1, OwnerConns, r.Refused())
		}
	}
	if !closedSoon(dial(t, ln)) {
		t.Error("the connection past OwnerConns, above the limit, was not closed")
	}
	roomAfter(t, &r, ln, kept, held[0])
	for _, k := range held[1:] {
		k.Close()
	}
}
