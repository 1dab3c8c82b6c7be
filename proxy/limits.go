package proxy

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/units"
)

// Limits bound what clients can make the proxy hold (hermes.yaml gateway:,
// SPEC §13). Zero fields take the units.Default* values.
type Limits struct {
	// MaxConns caps the client connections open at once. New lowers it to
	// fit the descriptor limit (see ReservedFDs and FDsPerConn).
	MaxConns int
	// MaxBody caps one request body (413 above it).
	MaxBody int64
	// MaxInFlight caps the request body bytes held by all requests at
	// once; at least MaxBody.
	MaxInFlight int64
	// ReadHeaderTimeout bounds reading a request's headers,
	// BodyReadTimeout its body (and the wait for room under MaxInFlight),
	// IdleTimeout a kept-alive connection's wait for its next request.
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	IdleTimeout       time.Duration
}

// Descriptors the proxy keeps out of its own reach, and what it spends.
const (
	// ReservedFDs are left to the rest of hermesd (control API, logs,
	// ledger, notify socket, spawning units, pidfds) when the connection
	// cap is fitted to RLIMIT_NOFILE.
	ReservedFDs = 256
	// FDsPerConn: a client connection and the upstream connection of its
	// call (HTTP/1.1: one call at a time per connection).
	FDsPerConn = 2
	// idleUpstream bounds the idle upstream connections kept for reuse,
	// over both clients (Transport and stream client).
	idleUpstream = 2 * maxIdleTotal
)

// fitConns is the largest connection cap whose descriptors (FDsPerConn for
// each connection, the idle upstream pools and the listener), with
// ReservedFDs, stay under limit; at least 1.
func fitConns(limit uint64) int {
	if limit > 1<<30 {
		limit = 1 << 30
	}
	n := (int(limit) - ReservedFDs - idleUpstream - 1) / FDsPerConn
	return max(n, 1)
}

// nofile is the soft RLIMIT_NOFILE, or a large number when it cannot be read.
func nofile() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 1 << 20
	}
	return uint64(rl.Cur) // int64 on FreeBSD, where RLIM_INFINITY is -1: the largest here
}

func (l *Limits) fill() {
	if l.MaxConns <= 0 {
		l.MaxConns = units.DefaultMaxConnections
	}
	if l.MaxBody <= 0 {
		l.MaxBody = int64(units.DefaultMaxRequestBody)
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = max(int64(units.DefaultMaxBodiesInFlight), l.MaxBody)
	}
	l.MaxInFlight = max(l.MaxInFlight, l.MaxBody)
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = units.DefaultReadHeaderTimeout
	}
	if l.BodyReadTimeout <= 0 {
		l.BodyReadTimeout = units.DefaultBodyReadTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = units.DefaultIdleTimeout
	}
}

// Usage is what the proxy holds now, for `hermesctl status`.
type Usage struct {
	Conns        int   // client connections open
	Refused      int64 // connections refused over MaxConns since start
	BodyBytes    int64 // request body bytes held now
	PeakBodyByte int64 // the most ever held at once
}

// Limits returns the limits in force (MaxConns as fitted to the
// descriptor limit).
func (p *Proxy) Limits() Limits { return p.opts.Limits }

// Usage returns what the proxy holds now.
func (p *Proxy) Usage() Usage {
	return Usage{
		Conns:        p.conns.open(),
		Refused:      p.conns.refused.Load(),
		BodyBytes:    p.bodies.used.Load(),
		PeakBodyByte: p.bodies.peak.Load(),
	}
}

// connCap counts the proxy's client connections. Its listener accepts
// every connection and, over the cap, answers it at once with a 503 and
// closes it, rather than leaving it unaccepted: a connection waiting in
// the kernel's backlog looks to its client like a provider that never
// answers (the hang the proxy exists to cut), is invisible to status, and
// waits behind whoever holds the slots; a 503 says what happened, and
// every OpenAI client retries it with backoff. The refused connection
// holds a descriptor only while its short answer is written.
//
// A connection is unauthenticated until one of its requests presents the
// token (guard; promote). What unauthenticated connections hold is
// bounded apart from the rest: at most preAuthSlots of the cap at once,
// each for at most preAuthIdle, and when a new connection finds no room
// the oldest unauthenticated one is closed to make it. So a stranger
// without the token, whatever it opens, never holds the slots the owner's
// clients need: their connections present the token in their first
// request and leave the unauthenticated pool at once.
type connCap struct {
	max     int
	refused atomic.Int64
	evicted atomic.Int64
	logf    func(string, ...any)

	mu     sync.Mutex
	authed int           // guarded by mu: connections that presented the token
	pre    list.List     // guarded by mu: of *capConn, the unauthenticated, oldest first
	idle   time.Duration // how long an unauthenticated connection is kept; 0: preAuthIdle (tests shorten it)
}

// preAuthIdle is how long a connection may stay open without presenting
// the token.
const preAuthIdle = 10 * time.Second

// preAuthSlots is how many connections that have not presented the token
// are kept at once: a quarter of the cap, at least 1. The owner's
// clients present it in the first request of each connection, so that a
// burst of their new connections is rarely a quarter of the cap at once.
func preAuthSlots(cap int) int { return max(1, cap/4) }

// open is the number of client connections open.
func (c *connCap) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authed + c.pre.Len()
}

// admit makes room for a new connection and registers it as
// unauthenticated: it reports false when the cap is held by connections
// that presented the token. evict is the unauthenticated connection
// closed to make room, if any.
func (c *connCap) admit(cc *capConn) (ok bool, evict *capConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	full := c.authed+c.pre.Len() >= c.max
	if full && c.pre.Len() == 0 {
		return false, nil
	}
	if full || c.pre.Len() >= preAuthSlots(c.max) {
		evict = c.pre.Remove(c.pre.Front()).(*capConn)
		evict.elem, evict.closed = nil, true
	}
	cc.elem = c.pre.PushBack(cc)
	return true, evict
}

// promote moves cc out of the unauthenticated pool: a request on it
// presented the token.
func (c *connCap) promote(cc *capConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc.elem == nil || cc.closed {
		return
	}
	c.pre.Remove(cc.elem)
	cc.elem = nil
	c.authed++
	if cc.idle != nil {
		cc.idle.Stop()
	}
}

// release gives cc's slot back; it reports false when it was given back
// already (cc was evicted, or closed before).
func (c *connCap) release(cc *capConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc.closed {
		return false
	}
	cc.closed = true
	if cc.elem != nil {
		c.pre.Remove(cc.elem)
		cc.elem = nil
	} else {
		c.authed--
	}
	return true
}

type capListener struct {
	net.Listener
	c *connCap
}

// refusal is written, whole, to a connection over the cap.
var refusal = func() []byte {
	body := `{"error":{"message":"hermes proxy: too many connections: the proxy holds gateway.max_connections client connections already; retry shortly, or raise gateway.max_connections in hermes.yaml","type":"server_error","code":"too_many_connections"}}` + "\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

func (l capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &capConn{Conn: c, c: l.c}
		ok, evict := l.c.admit(cc)
		if evict != nil {
			evict.idle.Stop()
			evict.Conn.Close()
			if n := l.c.evicted.Add(1); n == 1 || n%100 == 0 {
				l.c.logf("proxy: closed the connection from %s, which had not presented the proxy token, to make room for a new one; %d closed so far", evict.RemoteAddr(), n)
			}
		}
		if ok {
			l.c.mu.Lock()
			if !cc.closed && cc.elem != nil {
				cc.idle = time.AfterFunc(cmp.Or(l.c.idle, preAuthIdle), cc.expire)
			}
			l.c.mu.Unlock()
			return cc, nil
		}
		if n := l.c.refused.Add(1); n == 1 || n%100 == 0 {
			l.c.logf("proxy: refused a connection from %s: %d connections open, the cap (gateway.max_connections); %d refused so far", c.RemoteAddr(), l.c.max, n)
		}
		// The send buffer of a fresh connection is empty: the write does
		// not block; the deadline is for a broken stack.
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write(refusal)
		c.Close()
	}
}

// capConn gives its slot back once, on its first Close (or when it is
// evicted).
type capConn struct {
	net.Conn
	c *connCap
	// guarded by c.mu: elem is its place in the unauthenticated pool (nil
	// once promoted or gone), closed is set once its slot is given back,
	// idle closes it if it is still unauthenticated after preAuthIdle.
	elem   *list.Element
	closed bool
	idle   *time.Timer
}

// expire closes the connection if it still has not presented the token.
func (c *capConn) expire() {
	c.c.mu.Lock()
	pre := c.elem != nil && !c.closed
	c.c.mu.Unlock()
	if pre {
		c.Close()
	}
}

func (c *capConn) Close() error {
	if c.c.release(c) {
		c.c.mu.Lock()
		if c.idle != nil {
			c.idle.Stop()
		}
		c.c.mu.Unlock()
	}
	return c.Conn.Close()
}

// connKey is the context key of a request's *capConn.
type connKey struct{}

// promote marks the connection of r, whose request presented the token,
// as authenticated.
func (p *Proxy) promote(r *http.Request) {
	if cc, ok := r.Context().Value(connKey{}).(*capConn); ok {
		p.conns.promote(cc)
	}
}

// bodyBudget bounds the request body bytes held across requests
// (Limits.MaxInFlight). A request whose length is declared
// (Content-Length) waits for room for all of it at once, within its
// body-read timeout; a chunked one takes room piece by piece as it reads
// and is refused when there is none, rather than wait holding part of it:
// two such requests each waiting for the other's bytes would never end.
type bodyBudget struct {
	sem  *semaphore.Weighted
	used atomic.Int64 // bytes held now
	peak atomic.Int64 // the most ever held at once
}

func newBodyBudget(n int64) *bodyBudget { return &bodyBudget{sem: semaphore.NewWeighted(n)} }

func (b *bodyBudget) took(n int64) {
	u := b.used.Add(n)
	for {
		p := b.peak.Load()
		if u <= p || b.peak.CompareAndSwap(p, u) {
			return
		}
	}
}

func (b *bodyBudget) acquire(ctx context.Context, n int64) error {
	if err := b.sem.Acquire(ctx, n); err != nil {
		return err
	}
	b.took(n)
	return nil
}

func (b *bodyBudget) tryAcquire(n int64) bool {
	if !b.sem.TryAcquire(n) {
		return false
	}
	b.took(n)
	return true
}

func (b *bodyBudget) release(n int64) {
	if n > 0 {
		b.used.Add(-n)
		b.sem.Release(n)
	}
}

// Errors of readBody; each is answered with its own status.
var (
	errBodyTooLarge = errors.New("request body too large")   // 413
	errBodyBusy     = errors.New("request bodies in flight") // 503
	errBodyTimeout  = errors.New("request body too slow")    // 408
)

// bodyChunk is the step in which a chunked body takes room; bodyPiece
// the size of readBody's reads past a declared length.
const (
	bodyChunk = 64 << 10
	bodyPiece = 4 << 10
)

// readBody reads r's body within Limits.BodyReadTimeout and MaxBody,
// holding room for it in the body budget. The caller calls release once
// the body and every copy made of it are no longer needed (after the
// call went upstream), whatever the outcome; on error there is nothing
// to release.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) (raw []byte, release func(), err error) {
	lim := p.opts.Limits
	deadline := time.Now().Add(lim.BodyReadTimeout)
	rc := http.NewResponseController(w)
	// The connection's read deadline ends a slow body. It is cleared once
	// the body is read, so that the server's watch for a client that goes
	// away is not cut short; after a failure it stays, as it bounds the
	// server's own drain of the unread body too.
	_ = rc.SetReadDeadline(deadline)
	if r.ContentLength > lim.MaxBody {
		return nil, nil, fmt.Errorf("%w: the body is %d bytes, over gateway.max_request_body (%d bytes)", errBodyTooLarge, r.ContentLength, lim.MaxBody)
	}
	var held int64
	release = sync.OnceFunc(func() { p.bodies.release(held) })
	fail := func(e error) ([]byte, func(), error) {
		release()
		return nil, nil, e
	}
	if r.ContentLength >= 0 {
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		err := p.bodies.acquire(ctx, r.ContentLength)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("%w: no room for %d bytes within gateway.body_read_timeout (%s): other requests hold %d of gateway.max_bodies_in_flight (%d bytes)",
				errBodyBusy, r.ContentLength, lim.BodyReadTimeout, p.bodies.used.Load(), lim.MaxInFlight))
		}
		held = r.ContentLength
		raw = make([]byte, 0, r.ContentLength)
	}
	// The body is read into its own room (the declared length, or what
	// append grew), and through a small piece when that is full (a body
	// of no declared length, the read that finds EOF). A 32 KiB buffer per
	// request was 32 MB of garbage for 1000 streams opened, and a heap
	// that grew to match.
	var piece []byte
	for {
		var n int
		var rerr error
		if len(raw) < cap(raw) {
			n, rerr = r.Body.Read(raw[len(raw):cap(raw)])
		} else {
			if piece == nil {
				piece = make([]byte, bodyPiece)
			}
			n, rerr = r.Body.Read(piece)
		}
		if int64(len(raw)+n) > lim.MaxBody {
			return fail(fmt.Errorf("%w: the body exceeds gateway.max_request_body (%d bytes)", errBodyTooLarge, lim.MaxBody))
		}
		if need := int64(len(raw) + n); need > held {
			step := max(need-held, min(bodyChunk, lim.MaxBody-held))
			if !p.bodies.tryAcquire(step) {
				return fail(fmt.Errorf("%w: other requests hold %d of gateway.max_bodies_in_flight (%d bytes)", errBodyBusy, p.bodies.used.Load(), lim.MaxInFlight))
			}
			held += step
		}
		if len(raw) < cap(raw) {
			raw = raw[:len(raw)+n]
		} else {
			raw = append(raw, piece[:n]...)
		}
		if errors.Is(rerr, io.EOF) {
			_ = rc.SetReadDeadline(time.Time{})
			return raw, release, nil
		}
		if rerr != nil {
			var ne net.Error
			if errors.As(rerr, &ne) && ne.Timeout() {
				return fail(fmt.Errorf("%w: the body did not arrive within gateway.body_read_timeout (%s)", errBodyTimeout, lim.BodyReadTimeout))
			}
			return fail(rerr)
		}
	}
}

// bodyError is the answer to a readBody error.
func bodyError(err error) *apiError {
	switch {
	case errors.Is(err, errBodyTooLarge):
		return badRequest(http.StatusRequestEntityTooLarge, "body_too_large", err.Error(), "").closing()
	case errors.Is(err, errBodyBusy):
		return newError(http.StatusServiceUnavailable, "server_error", "bodies_in_flight", err.Error(),
			"retry shortly, or raise gateway.max_bodies_in_flight in hermes.yaml").with("Retry-After", "1")
	case errors.Is(err, errBodyTimeout):
		return badRequest(http.StatusRequestTimeout, "body_timeout", err.Error(), "").closing()
	}
	return badRequest(http.StatusBadRequest, "bad_body", "reading the request body: "+err.Error(), "").closing()
}
