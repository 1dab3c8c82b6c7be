package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Sizes and limits of the stream client.
const (
	// upstreamReadBuffer holds a response's status line and header lines
	// (longer lines are assembled by textproto) and the chunk framing; the
	// SSE reader keeps its own buffer for the events, and reads past this
	// one when it is empty, so a small one costs no speed and keeps an idle
	// stream small.
	upstreamReadBuffer = 512
	// maxIdlePerHost and idleTimeout bound the connections kept for reuse,
	// as the Transport's MaxIdleConnsPerHost and IdleConnTimeout did.
	maxIdlePerHost = 64
	idleTimeout    = 90 * time.Second
	// maxIdleTotal bounds the idle connections over all hosts (and the
	// Transport's, apart): each holds a descriptor (see Descriptors).
	maxIdleTotal = 64
)

// streamClient sends streaming calls upstream without net/http's
// HTTP/1.1 Transport. It dials (TCP, then TLS for https), writes the
// request, and reads the response in the caller's goroutine: a relayed
// stream then costs no goroutine beyond its handler's, where the Transport
// keeps a read loop and a write loop per connection (with their buffers,
// 14 of the 56 MB that 1000 idle streams cost through the Transport).
//
// A TLS provider is offered "h2" and "http/1.1" by ALPN. One that takes h2
// (cloud providers do) carries many streams on one connection, through
// net/http's HTTP/2 client on a connection of this client's own
// (http.ClientConn): one read loop per connection, and one goroutine per
// stream (net/http's, about 6 KB of stack), in place of a TLS connection
// per stream, its record buffers and its handshake's garbage (1000 idle
// streams: 67 → 58 MB RSS). A provider that
// takes http/1.1, and every plain http provider, gets HTTP/1.1, one
// connection per stream in flight.
//
// The call's context owns the stream while the response is read: when it
// ends (a timeout layer cut the call, the client went away, shutdown), an
// HTTP/1.1 connection is closed, which ends a blocked read at once; an
// HTTP/2 stream is reset alone (RST_STREAM), and the connection's other
// streams go on. An HTTP/1.1 response read to its end returns its
// connection to an idle pool for the next call to the same host; an HTTP/2
// connection takes new streams for as long as the provider allows
// (SETTINGS_MAX_CONCURRENT_STREAMS; a full one makes the client dial
// another), and closes itself after idleTimeout without one.
//
// streamClient does not follow redirects, does not compress, and does not
// go through an HTTP proxy: calls for which the environment names a proxy
// go through the Transport (see Proxy.streamed).
type streamClient struct {
	// dial opens TCP connections; tests point it at their upstream.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// tls is cloned for each https connection; nil uses the system roots.
	tls *tls.Config

	// h2 makes the HTTP/2 connections (see dialTLS); built once, by h2Once.
	h2     *http.Transport
	h2Once sync.Once

	mu   sync.Mutex
	idle map[string][]*upstreamConn    // guarded by mu; by hostKey, newest last
	h2c  map[string][]*http.ClientConn // guarded by mu; by hostKey, oldest first
	// dialing holds, by hostKey, a channel closed when the TLS dial in
	// flight ends; http1 the hosts whose last TLS dial took http/1.1.
	// Both guarded by mu (see connect).
	dialing map[string]chan struct{}
	http1   map[string]bool
}

// upstreamConn is one connection to a provider, with the reader its
// responses are parsed from.
type upstreamConn struct {
	conn  net.Conn // the *tls.Conn for https
	raw   net.Conn // the TCP connection under it: closing it aborts at once
	br    *bufio.Reader
	key   string
	timer *time.Timer // closes the connection when idle too long; guarded by streamClient.mu
}

// errUpstreamScheme: a base URL that is neither http nor https.
var errUpstreamScheme = errors.New("unsupported URL scheme: base_url must start with http:// or https://")

// hostKey returns the pool key and the dial address of u.
func hostKey(u *url.URL) (key, addr string, err error) {
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return "", "", errUpstreamScheme
	}
	addr = net.JoinHostPort(u.Hostname(), port)
	return u.Scheme + "://" + addr, addr, nil
}

// do sends a POST of payload with header h to rawURL and returns the
// response once its headers are read; the connection (HTTP/2: the
// stream) stays owned by ctx until the response body is closed. Errors
// are *url.Error, as http.Client's. Closing an HTTP/1.1 body returns the
// connection to the pool when the body was read to its end and ctx had
// not ended; otherwise it closes the connection. Closing an HTTP/2 body
// ends its stream (reset when unread), never the connection. connected is
// called once a connection is established.
func (c *streamClient) do(ctx context.Context, rawURL string, h http.Header, payload []byte, connected func()) (*http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: rawURL, Err: err}
	}
	resp, err := c.roundTrip(ctx, u, h, payload, connected)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: rawURL, Err: err}
	}
	return resp, nil
}

func (c *streamClient) roundTrip(ctx context.Context, u *url.URL, h http.Header, payload []byte, connected func()) (*http.Response, error) {
	key, addr, err := hostKey(u)
	if err != nil {
		return nil, err
	}
	var head []byte
	for {
		if cc := c.reserve(key); cc != nil {
			connected()
			return roundTrip2(ctx, cc, u, h, payload)
		}
		uc, reused := c.get(key), true
		if uc == nil {
			reused = false
			var cc *http.ClientConn
			if cc, uc, err = c.connect(ctx, u, key, addr); err != nil {
				return nil, err
			}
			if cc != nil {
				connected()
				return roundTrip2(ctx, cc, u, h, payload)
			}
			if uc == nil {
				continue // another call's dial ended: look again
			}
		}
		connected()
		if head == nil {
			head = requestHead(u, h, len(payload))
		}
		stop := context.AfterFunc(ctx, func() { uc.raw.Close() })
		resp, wrote, err := uc.exchange(head, payload)
		if err == nil {
			resp.Body = &streamBody{rc: resp.Body, uc: uc, c: c, stop: stop, reuse: !resp.Close}
			return resp, nil
		}
		stop()
		uc.raw.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		// A reused connection the provider closed while it sat idle fails
		// on the first write; the request did not leave, so it is safe to
		// send again on a fresh connection (as the Transport does).
		if !reused || wrote {
			return nil, err
		}
	}
}

// roundTrip2 sends the request as a new stream on cc, whose slot the
// caller reserved. The stream is ctx's: when ctx ends, net/http's HTTP/2
// client resets it (and only it), and a blocked read of its body returns.
func roundTrip2(ctx context.Context, cc *http.ClientConn, u *url.URL, h http.Header, payload []byte) (*http.Response, error) {
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           u,
		Host:          u.Host,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(payload)),
		ContentLength: int64(len(payload)),
		GetBody:       func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil },
	}
	resp, err := cc.RoundTrip(req.WithContext(ctx))
	if err != nil && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return resp, err
}

// reserve takes a slot on an open HTTP/2 connection to key, or returns
// nil when none has one; connections that closed are dropped.
func (c *streamClient) reserve(key string) *http.ClientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.h2c[key]
	open := list[:0]
	var got *http.ClientConn
	for _, cc := range list {
		if cc.Err() != nil {
			continue
		}
		open = append(open, cc)
		if got == nil && cc.Reserve() == nil {
			got = cc
		}
	}
	clear(list[len(open):])
	if len(open) == 0 {
		delete(c.h2c, key)
	} else {
		c.h2c[key] = open
	}
	return got
}

// requestHead is the request line and headers of a POST to u.
func requestHead(u *url.URL, h http.Header, n int) []byte {
	var b bytes.Buffer
	b.WriteString("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	if h.Get("User-Agent") == "" {
		b.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	_ = h.Write(&b) // into a bytes.Buffer: cannot fail; values are sanitised
	b.WriteString("Content-Length: " + strconv.Itoa(n) + "\r\n\r\n")
	return b.Bytes()
}

// connect opens a connection to addr for a call to u: an HTTP/2
// connection, with a slot reserved for the call and kept for other calls,
// when u is https and the provider takes h2; an HTTP/1.1 connection
// otherwise. ctx bounds the dial and the TLS handshake.
//
// One TLS dial at a time goes to a host that took h2 last time, or was
// never dialled: a burst of calls then shares the connection the first
// one opens instead of opening one each. A call that waited for another's
// dial gets nil, nil, nil, and looks for a connection again. Dials to a
// host that took http/1.1 last time run side by side.
func (c *streamClient) connect(ctx context.Context, u *url.URL, key, addr string) (*http.ClientConn, *upstreamConn, error) {
	if u.Scheme != "https" {
		raw, err := c.dial(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		return nil, newUpstreamConn(raw, raw, key), nil
	}
	c.mu.Lock()
	if c.dialing == nil {
		c.dialing, c.http1 = map[string]chan struct{}{}, map[string]bool{}
	}
	if wait, ok := c.dialing[key]; ok && !c.http1[key] {
		c.mu.Unlock()
		select {
		case <-wait:
			return nil, nil, nil
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		}
	}
	done := make(chan struct{})
	c.dialing[key] = done
	c.mu.Unlock()

	cc, uc, err := c.dialHTTPS(ctx, u, addr)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dialing[key] == done {
		delete(c.dialing, key)
	}
	close(done)
	switch {
	case cc != nil:
		delete(c.http1, key)
		if c.h2c == nil {
			c.h2c = map[string][]*http.ClientConn{}
		}
		c.h2c[key] = append(c.h2c[key], cc)
	case uc != nil:
		c.http1[key] = true
	}
	return cc, uc, err
}

// dialHTTPS opens a TLS connection to addr, and returns it as an HTTP/2
// connection with a slot reserved, or as an HTTP/1.1 one.
func (c *streamClient) dialHTTPS(ctx context.Context, u *url.URL, addr string) (*http.ClientConn, *upstreamConn, error) {
	c.h2Once.Do(c.initH2)
	cc, err := c.h2.NewClientConn(context.WithValue(ctx, serverNameKey{}, u.Hostname()), "https", addr)
	if h1, ok := errors.AsType[*http1Only](err); ok {
		return nil, h1.uc, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := cc.Reserve(); err != nil { // a fresh connection has room, unless the provider closed it at once
		cc.Close()
		return nil, nil, err
	}
	return cc, nil, nil
}

func newUpstreamConn(conn, raw net.Conn, key string) *upstreamConn {
	return &upstreamConn{conn: conn, raw: raw, key: key, br: bufio.NewReaderSize(conn, upstreamReadBuffer)}
}

// initH2 builds the Transport whose only use is NewClientConn: it dials
// through dialTLS, and makes an HTTP/2 connection of what dialTLS returns.
// It keeps no pool (connect and reserve do), follows no HTTP proxy, and
// does not compress.
func (c *streamClient) initH2() {
	var protos http.Protocols
	protos.SetHTTP1(true) // what a provider that does not take h2 speaks (dialTLS hands it back)
	protos.SetHTTP2(true)
	c.h2 = &http.Transport{
		DialTLSContext:     c.dialTLS,
		Protocols:          &protos,
		DisableCompression: true,
		IdleConnTimeout:    idleTimeout,
	}
}

// serverNameKey carries the host name a TLS connection must verify, from
// connect to dialTLS, through the Transport's dial.
type serverNameKey struct{}

// http1Only is dialTLS's answer for a provider that did not take h2: the
// connection, handshake done, for the HTTP/1.1 client. It travels as an
// error so that the Transport hands it back to connect untouched instead
// of running its own HTTP/1.1 loops on it; NewClientConn dials in the
// caller's goroutine and returns the dialer's error as it is.
type http1Only struct{ uc *upstreamConn }

func (*http1Only) Error() string { return "provider took http/1.1" }

// dialTLS dials addr and runs the TLS handshake, offering h2 and
// http/1.1. A connection on which the provider took h2 is returned for
// the Transport to run HTTP/2 on; any other is returned inside an
// *http1Only error.
func (c *streamClient) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	raw, err := c.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{}
	if c.tls != nil {
		cfg = c.tls.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _ = ctx.Value(serverNameKey{}).(string)
	}
	cfg.NextProtos = []string{"h2", "http/1.1"}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		return tc, nil
	}
	return nil, &http1Only{uc: newUpstreamConn(tc, raw, "https://"+addr)}
}

// exchange writes the request and reads the response's headers, skipping
// interim 1xx answers. wrote reports whether any byte of the request was
// written.
func (uc *upstreamConn) exchange(head, payload []byte) (resp *http.Response, wrote bool, err error) {
	var n int64
	if _, ok := uc.conn.(*tls.Conn); ok {
		// Two records are cheaper than a copy of a large body.
		var m int
		m, err = uc.conn.Write(head)
		n = int64(m)
		if err == nil {
			m, err = uc.conn.Write(payload)
			n += int64(m)
		}
	} else {
		bufs := net.Buffers{head, payload}
		n, err = bufs.WriteTo(uc.conn)
	}
	if err != nil {
		return nil, n > 0, err
	}
	req := &http.Request{Method: http.MethodPost}
	for {
		resp, err = http.ReadResponse(uc.br, req)
		if err != nil {
			return nil, true, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, true, nil
		}
	}
}

// get takes the newest idle connection for key that is still open, or
// returns nil.
func (c *streamClient) get(key string) *upstreamConn {
	for {
		c.mu.Lock()
		list := c.idle[key]
		if len(list) == 0 {
			c.mu.Unlock()
			return nil
		}
		uc := list[len(list)-1]
		c.idle[key] = list[:len(list)-1]
		uc.timer.Stop()
		c.mu.Unlock()
		if uc.alive() {
			return uc
		}
		uc.conn.Close()
	}
}

// alive reports whether an idle connection can carry a request: the
// provider has not closed it, and sent nothing since the last response (a
// TLS alert or stray bytes make it unusable too). It peeks at the socket
// without waiting; a read with an expired deadline cannot tell, as the
// runtime fails it before asking the kernel. A connection that is not a
// socket (a test's) counts as alive.
func (uc *upstreamConn) alive() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	sc, ok := uc.raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readability
	})
	return err == nil && errors.Is(rerr, syscall.EAGAIN)
}

// put keeps uc for reuse, or closes it when the host has enough idle
// connections.
func (c *streamClient) put(uc *upstreamConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = map[string][]*upstreamConn{}
	}
	total := 0
	for _, l := range c.idle {
		total += len(l)
	}
	if len(c.idle[uc.key]) >= maxIdlePerHost || total >= maxIdleTotal {
		uc.conn.Close()
		return
	}
	c.idle[uc.key] = append(c.idle[uc.key], uc)
	if uc.timer == nil {
		uc.timer = time.AfterFunc(idleTimeout, func() { c.expire(uc) })
	} else {
		uc.timer.Reset(idleTimeout)
	}
}

// expire drops uc from the pool, if it is still there, and closes it.
func (c *streamClient) expire(uc *upstreamConn) {
	c.mu.Lock()
	list := c.idle[uc.key]
	i := -1
	for j, x := range list {
		if x == uc {
			i = j
		}
	}
	if i < 0 { // taken by get in the meantime
		c.mu.Unlock()
		return
	}
	c.idle[uc.key] = append(list[:i:i], list[i+1:]...)
	c.mu.Unlock()
	uc.conn.Close()
}

// closeIdle closes every idle HTTP/1.1 connection, and every HTTP/2
// connection with the streams it still carries: Serve calls it once its
// calls and drains are over.
func (c *streamClient) closeIdle() {
	c.mu.Lock()
	idle, h2c := c.idle, c.h2c
	c.idle, c.h2c = nil, nil
	for _, list := range idle {
		for _, uc := range list {
			uc.timer.Stop()
		}
	}
	c.mu.Unlock()
	for _, list := range idle {
		for _, uc := range list {
			uc.conn.Close()
		}
	}
	for _, list := range h2c {
		for _, cc := range list {
			cc.Close()
		}
	}
}

// streamBody is the body of a streamClient response.
type streamBody struct {
	rc    io.ReadCloser
	uc    *upstreamConn
	c     *streamClient
	stop  func() bool // stops the context's hold on the connection
	reuse bool        // the provider did not say Connection: close
	eof   bool
	done  bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// Close returns the connection to the pool when the body was read to its
// end and nothing closed it; otherwise it closes the connection (without
// reading the rest, which could take as long as the provider likes).
func (b *streamBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if b.stop() && b.eof && b.reuse && b.uc.br.Buffered() == 0 {
		b.rc.Close() // at EOF: reads nothing
		b.c.put(b.uc)
		return nil
	}
	b.uc.raw.Close()
	return nil
}
