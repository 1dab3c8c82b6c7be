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

// streamClient sends streaming calls upstream without net/http's Transport.
// It dials (TCP, then TLS for https), writes the request, and reads the
// response in the caller's goroutine: a relayed stream then costs no
// goroutine beyond its handler's, where the Transport keeps a read loop and
// a write loop per connection (with their buffers, 14 of the 56 MB that
// 1000 idle streams cost through the Transport).
// The price is HTTP/1.1 only: a TLS provider is asked for "http/1.1" by
// ALPN, one connection per stream in flight.
//
// The call's context owns the connection while the response is read: when
// it ends (a timeout layer cut the call, the client went away, shutdown),
// the connection is closed, which ends a blocked read at once. A response
// read to its end is returned to an idle pool for the next call to the
// same host.
//
// streamClient does not follow redirects, does not compress, and does not
// go through an HTTP proxy: calls for which the environment names a proxy
// go through the Transport (see Proxy.streamed).
type streamClient struct {
	// dial opens TCP connections; tests point it at their upstream.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// tls is cloned for each https connection; nil uses the system roots.
	tls *tls.Config

	mu   sync.Mutex
	idle map[string][]*upstreamConn // guarded by mu; by hostKey, newest last
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
// response once its headers are read; the connection stays owned by ctx
// until the response body is closed. Errors are *url.Error, as
// http.Client's. Closing the body returns the connection to the pool when
// the body was read to its end and ctx had not ended; otherwise it closes
// the connection. connected is called once a connection is established.
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
	head := requestHead(u, h, len(payload))
	for {
		uc, reused := c.get(key), true
		if uc == nil {
			reused = false
			if uc, err = c.connect(ctx, u, key, addr); err != nil {
				return nil, err
			}
		}
		connected()
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

// connect dials addr, and for https runs the TLS handshake; ctx bounds
// both.
func (c *streamClient) connect(ctx context.Context, u *url.URL, key, addr string) (*upstreamConn, error) {
	raw, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	uc := &upstreamConn{conn: raw, raw: raw, key: key}
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if c.tls != nil {
			cfg = c.tls.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		uc.conn = tc
	}
	uc.br = bufio.NewReaderSize(uc.conn, upstreamReadBuffer)
	return uc, nil
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

// closeIdle closes every idle connection.
func (c *streamClient) closeIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
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
