// Package fdreserve keeps descriptors out of the listeners' reach: what
// hermesd's units need to start and log (their log files, pidfds, start
// gates), the ledger and the control API must never be taken by
// connections that strangers open to a listener (the proxy,
// metrics.listen, the control socket).
//
// A Reserve knows a limit: the lowest descriptor number no accepted
// connection may keep. The kernel gives a new descriptor the lowest
// number free, so a connection accepted as descriptor N means 0 … N-1 are
// all open: once connections have filled the numbers below the limit,
// each new one comes at or above it and is closed at once. The numbers
// from the limit up are thus always left to the rest of the process,
// whatever a flood of connections does: at most one descriptor of theirs
// is there, for the moment it takes to close it. The check costs no
// system call beyond the accept, so it holds under the flood it guards
// against.
package fdreserve

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// Reserve is the descriptor limit of a process's listeners. The zero value
// admits every connection; Set gives it a limit. Safe for concurrent use.
type Reserve struct {
	limit   atomic.Int64 // 0: none
	soft    atomic.Int64 // the soft limit Set was given; 0: none
	refused atomic.Int64
}

// Set makes the reserve the top reserve descriptors of soft (the soft
// RLIMIT_NOFILE): connections are admitted while their descriptor number
// is under soft-reserve. A reserve of soft or more leaves the listeners
// one descriptor, so that they still answer when nothing else is open.
func (r *Reserve) Set(soft uint64, reserve int) {
	limit := int64(1)
	if soft > uint64(reserve) {
		limit = max(int64(soft)-int64(reserve), 1)
	}
	if soft > 1<<40 {
		limit, soft = 1<<40, 1<<40
	}
	r.limit.Store(limit)
	r.soft.Store(int64(soft))
}

// OwnerRoom is how many descriptors below the soft limit an Owner
// listener leaves to the rest of the process, once it holds OwnerConns
// connections.
const OwnerRoom = 64

// OwnerConns is how many connections an Owner listener keeps whatever
// their descriptor: when the units took every descriptor below the soft
// limit less OwnerRoom, the owner must still be answered (a status that
// says why they fail).
const OwnerConns = 8

// Limit is the lowest descriptor number a connection may not keep; 0 when
// Set was never called.
func (r *Reserve) Limit() int64 { return r.limit.Load() }

// Refused is how many connections were closed at accept so far.
func (r *Reserve) Refused() int64 { return r.refused.Load() }

// Admit reports whether c may be kept by a listener that leaves keep
// descriptors below the reserve to the listeners ranked above it: its
// descriptor is under the limit less keep (or it has none a Reserve can
// read).
func (r *Reserve) Admit(c net.Conn, keep int) bool {
	return r.admit(c, r.limit.Load()-int64(keep))
}

// admitOwner reports whether c may be kept by an Owner listener: its
// descriptor is under the soft limit less OwnerRoom, whatever the
// reserve.
func (r *Reserve) admitOwner(c net.Conn) bool {
	return r.admit(c, r.soft.Load()-OwnerRoom)
}

// admit reports whether c's descriptor is under limit (at least 1); any
// connection when no limit was set, or when its descriptor is unknown.
func (r *Reserve) admit(c net.Conn, limit int64) bool {
	if r.limit.Load() <= 0 {
		return true
	}
	fd, err := descriptor(c)
	if err != nil {
		return true
	}
	return int64(fd) < max(limit, 1)
}

func descriptor(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errors.New("no descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// Limits are what one listener may hold.
type Limits struct {
	// Keep is how many descriptors under the reserve this listener leaves
	// to the listeners ranked above it (hermesd: the control API's, under
	// the proxy's and the metrics'), so that a flood of one never shuts
	// the owner out of the other.
	Keep int
	// MaxConns caps the connections it holds at once; 0: no cap. Over it,
	// a connection is closed as it is accepted.
	MaxConns int
	// Owner marks the listener that only the process's owner can reach
	// (hermesd's control socket, in a directory of mode 0700): it keeps
	// OwnerConns connections whatever their descriptor, and more while
	// they come under the soft limit less OwnerRoom, instead of the
	// reserve. The reserve counts what units may still need against
	// descriptor numbers, and once units hold more than it leaves, every
	// connection comes above it: the owner must still be answered then.
	Owner bool
}

// Listener wraps ln: a connection Admit refuses, or one over
// lim.MaxConns, is closed as it is accepted, and logged (the first, then
// every hundredth, of this listener; logf may be nil) with name, the
// listener's name in the message.
func (r *Reserve) Listener(ln net.Listener, name string, lim Limits, logf func(string, ...any)) net.Listener {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &listener{Listener: ln, r: r, name: name, lim: lim, logf: logf}
}

type listener struct {
	net.Listener
	r       *Reserve
	name    string
	lim     Limits
	logf    func(string, ...any)
	open    atomic.Int64
	refused atomic.Int64
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		why := ""
		switch {
		case l.lim.Owner:
			// Counted first: the count is what the first OwnerConns are.
			if l.open.Add(1) <= OwnerConns || l.r.admitOwner(c) {
				return &countedConn{Conn: c, l: l}, nil
			}
			l.open.Add(-1)
			why = fmt.Sprintf("it came as a descriptor at or above %d, the last %d of the limit (RLIMIT_NOFILE), kept for the units, and %d connections are open already", max(l.r.soft.Load()-OwnerRoom, 1), OwnerRoom, OwnerConns)
		case !l.r.Admit(c, l.lim.Keep):
			why = fmt.Sprintf("it came as a descriptor at or above %d, the ones kept for the units, the ledger and the control API (RLIMIT_NOFILE)", max(l.r.Limit()-int64(l.lim.Keep), 1))
		case l.lim.MaxConns > 0 && l.open.Add(1) > int64(l.lim.MaxConns):
			l.open.Add(-1)
			why = fmt.Sprintf("%d connections are open already, the most it keeps", l.lim.MaxConns)
		case l.lim.MaxConns > 0:
			return &countedConn{Conn: c, l: l}, nil
		default:
			return c, nil
		}
		// Counted before the close: whoever sees the connection end may
		// read the count at once.
		l.r.refused.Add(1)
		n := l.refused.Add(1)
		c.Close()
		if n == 1 || n%100 == 0 {
			l.logf("%s: closed a connection from %s at once: %s; %d closed so far", l.name, c.RemoteAddr(), why, n)
		}
	}
}

// countedConn gives its listener's count back once, on its first Close.
// It is still a syscall.Conn.
type countedConn struct {
	net.Conn
	l    *listener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("no descriptor")
	}
	return sc.SyscallConn()
}
