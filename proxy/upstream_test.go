package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/openai/openai-go/v3"
)

const events = "data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\n: ping\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n"

// rawUpstream serves handler over HTTP or HTTPS and counts the
// connections it accepted.
func rawUpstream(t *testing.T, useTLS bool, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	conns := &atomic.Int32{}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, conns
}

// clientFor returns a stream client for srv, trusting its certificate.
func clientFor(t *testing.T, srv *httptest.Server) *streamClient {
	t.Helper()
	var d net.Dialer
	c := &streamClient{dial: d.DialContext}
	if srv.TLS != nil {
		c.tls = srv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	t.Cleanup(c.closeIdle)
	return c
}

// callExpect makes call i (counted from 1) through c to srv's chat
// completions and fails t at once unless its whole answer is want.
func callExpect(t *testing.T, c *streamClient, srv *httptest.Server, i int, want string) {
	t.Helper()
	resp, err := c.do(t.Context(), srv.URL+"/v1/chat/completions", http.Header{}, []byte("{}"), func() {})
	if err != nil {
		t.Fatalf("call %d: %v", i, err)
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != want {
		t.Fatalf("call %d: got %q, %v", i, b, err)
	}
}

func (c *streamClient) idleCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.idle {
		n += len(l)
	}
	return n
}

// TestStreamClientFraming sends a request over HTTP and HTTPS and reads
// bodies framed every way HTTP/1.1 allows; connections whose body ended
// cleanly are reused.
func TestStreamClientFraming(t *testing.T) {
	const payload = `{"model":"m","stream":true}`
	tests := []struct {
		name    string
		tls     bool
		framing string // chunked, length, close
		reused  bool
	}{
		{name: "http chunked", framing: "chunked", reused: true},
		{name: "http content-length", framing: "length", reused: true},
		{name: "http close-delimited", framing: "close"},
		{name: "https chunked", tls: true, framing: "chunked", reused: true},
		{name: "https content-length", tls: true, framing: "length", reused: true},
		{name: "https close-delimited", tls: true, framing: "close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, conns := rawUpstream(t, tt.tls, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || string(b) != payload ||
					r.Header.Get("Authorization") != "Bearer k" || r.ContentLength != int64(len(payload)) || r.Proto != "HTTP/1.1" || (r.TLS != nil) != tt.tls {
					t.Errorf("upstream got %s %s %s %q, Authorization %q, Content-Length %d, TLS %v", r.Method, r.URL.Path, r.Proto, b, r.Header.Get("Authorization"), r.ContentLength, r.TLS != nil)
				}
				switch tt.framing {
				case "chunked":
					w.Header().Set("Content-Type", "text/event-stream")
					for _, part := range strings.SplitAfter(events, "\n\n") {
						io.WriteString(w, part)
						w.(http.Flusher).Flush()
					}
				case "length":
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Content-Length", strconv.Itoa(len(events)))
					io.WriteString(w, events)
				case "close":
					conn, bw, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Errorf("hijack: %v", err)
						return
					}
					bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + events)
					bw.Flush()
					conn.Close()
				}
			})
			c := clientFor(t, srv)
			for i := range 2 {
				h := http.Header{"Authorization": {"Bearer k"}, "Content-Type": {"application/json"}}
				connected := false
				resp, err := c.do(t.Context(), srv.URL+"/v1/chat/completions", h, []byte(payload), func() { connected = true })
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != events {
					t.Fatalf("call %d: got %q, %v, want the events", i+1, got, err)
				}
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || !connected {
					t.Errorf("call %d: got status %d, Content-Type %q, connected %v", i+1, resp.StatusCode, resp.Header.Get("Content-Type"), connected)
				}
			}
			want := int32(2)
			if tt.reused {
				want = 1
			}
			if got := conns.Load(); got != want {
				t.Errorf("got %d connections for 2 calls, want %d", got, want)
			}
		})
	}
}

// TestStreamClientClosedMidStream: an upstream that closes inside a chunked
// body gives a read error, and its connection is not kept.
func TestStreamClientClosedMidStream(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			srv, _ := rawUpstream(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				conn, bw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				first := "data: {}\n\n"
				fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(first), first)
				bw.Flush()
				conn.Close()
			})
			c := clientFor(t, srv)
			resp, err := c.do(t.Context(), srv.URL+"/v1/chat/completions", http.Header{}, []byte("{}"), func() {})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != "data: {}\n\n" || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("got %q, %v; want the first event, then io.ErrUnexpectedEOF", got, err)
			}
			if n := c.idleCount(); n != 0 {
				t.Errorf("got %d idle connections, want 0: a broken connection must not be reused", n)
			}
		})
	}
}

// TestStreamClientIdleClosedByProvider: a pooled connection the provider
// closed is noticed, and the call goes out on a fresh one.
func TestStreamClientIdleClosedByProvider(t *testing.T) {
	srv, conns := rawUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, events)
	})
	c := clientFor(t, srv)
	for i := range 2 {
		callExpect(t, c, srv, i+1, events)
		if i == 0 {
			if n := c.idleCount(); n != 1 {
				t.Fatalf("got %d idle connections, want 1", n)
			}
			srv.CloseClientConnections()
		}
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("got %d connections, want 2", got)
	}
}

// TestStreamClientCancel: ending the context closes the connection under a
// blocked read at once.
func TestStreamClientCancel(t *testing.T) {
	gone := make(chan struct{})
	srv, _ := rawUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		sseStart(w)
		<-r.Context().Done()
		close(gone)
	})
	c := clientFor(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	resp, err := c.do(ctx, srv.URL+"/v1/chat/completions", http.Header{}, []byte("{}"), func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	read := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 10))
		read <- err
	}()
	cancel()
	if err := <-read; err == nil {
		t.Error("got a read with no error after the context ended")
	}
	<-gone // the upstream saw the connection close
}

func TestStreamClientErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	var d net.Dialer
	c := &streamClient{dial: d.DialContext}
	tests := []struct {
		name string
		url  string
		want error
	}{
		{"connection refused", "http://" + refused + "/v1/chat/completions", syscall.ECONNREFUSED},
		{"unsupported scheme", "ftp://" + refused + "/v1", errUpstreamScheme},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.do(t.Context(), tt.url, http.Header{}, nil, func() { t.Error("connected, want no connection") })
			var ue *url.Error
			if !errors.As(err, &ue) || ue.Op != "Post" || ue.URL != tt.url || !errors.Is(err, tt.want) {
				t.Errorf("got %v, want a *url.Error for Post %s wrapping %v", err, tt.url, tt.want)
			}
		})
	}
}

// TestStreamClientThroughProxy runs streams through the proxy to an HTTPS
// provider, one that refuses connections, one whose connect never
// completes, and one that closes mid-stream: each ends with the right
// layer or error.
func TestStreamClientThroughProxy(t *testing.T) {
	t.Run("https stream", func(t *testing.T) {
		// The socket read timeout covers the TLS handshake: at the default
		// scale (120 ms) a loaded machine under -race can miss it, and this
		// case is about TLS working, not about timing.
		h := newHarness(t, setup{tls: true, scale: slowScale})
		h.up.play(think(0))
		text, err := stream(t, h.client("/v1/"), "gpt-4o")
		if err != nil || text != "hello" {
			t.Fatalf("got %q, %v; want hello", text, err)
		}
		h.up.play(answer) // a non-streaming call goes through the Transport, also over TLS
		c := h.client("/v1/")
		res, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o"))
		if err != nil || res.Choices[0].Message.Content != "hello" {
			t.Fatalf("got %v, %v; want hello", res, err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		h := newHarness(t, setup{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		h.proxy.stream.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		_, err = stream(t, h.client("/v1/"), "gpt-4o")
		var api *openai.Error
		if !errors.As(err, &api) || api.StatusCode != http.StatusBadGateway || api.Code != "upstream_unreachable" {
			t.Fatalf("got %v, want 502 upstream_unreachable", err)
		}
		says(t, api.Message, "provider openai at http://api.openai.test/v1", "connection refused", "check that it runs and that its base_url is right")
		if st := h.proxy.Status(); len(st) != 1 || st[0].Streak != 0 {
			t.Errorf("got breaker status %+v, want streak 0: a refused connection is not a stale kill", st)
		}
	})
	t.Run("connect never completes", func(t *testing.T) {
		h := newHarness(t, setup{})
		h.proxy.stream.dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		_, err := stream(t, h.client("/v1/"), "gpt-4o")
		var api *openai.Error
		if !errors.As(err, &api) || api.StatusCode != http.StatusGatewayTimeout || api.Code != "hermes_socket_read_timeout" {
			t.Fatalf("got %v, want 504 hermes_socket_read_timeout", err)
		}
		if !strings.Contains(api.Message, "socket read timeout fired while connecting") {
			t.Errorf("client error %q does not say the connect timed out", api.Message)
		}
	})
	t.Run("closed mid-stream", func(t *testing.T) {
		h := newHarness(t, setup{})
		h.up.play(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
			sseStart(w)
			send(w, chunk("content", "hel"))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // inside the chunked body: no terminating chunk
			}
		})
		text, err := stream(t, h.client("/v1/"), "gpt-4o")
		msg := errMessage(t, err)
		if text != "hel" || !strings.Contains(msg, "provider openai") || !strings.Contains(msg, "unexpected EOF") {
			t.Errorf("got %q and error %q, want the first chunk, then an error naming the provider and the broken stream", text, msg)
		}
	})
}

// TestStreamedFallsBackForHTTPProxy: a streaming call the environment
// sends through an HTTP proxy goes through the Transport.
func TestStreamedFallsBackForHTTPProxy(t *testing.T) {
	p, err := New(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://api.example.com/v1/chat/completions", nil)
	via, _ := url.Parse("http://proxy.example.com:3128")
	tests := []struct {
		name   string
		proxy  func(*http.Request) (*url.URL, error)
		stream bool
		want   bool
	}{
		{"stream, no HTTP proxy", func(*http.Request) (*url.URL, error) { return nil, nil }, true, true},
		{"stream, no proxy function", nil, true, true},
		{"stream through an HTTP proxy", http.ProxyURL(via), true, false},
		{"non-streaming", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.transport.Proxy = tt.proxy
			if got := p.streamed(req, tt.stream); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// brokenConn fails writes once broken, like a connection the provider
// closed while it sat idle. It is not a syscall.Conn, so alive cannot
// look at its socket.
type brokenConn struct {
	net.Conn
	broken *atomic.Bool
}

func (c brokenConn) Write(b []byte) (int, error) {
	if c.broken.Load() {
		return 0, syscall.EPIPE
	}
	return c.Conn.Write(b)
}

// TestStreamClientRetriesUnwrittenRequest: a request that could not be
// written on a reused connection goes out again on a fresh one.
func TestStreamClientRetriesUnwrittenRequest(t *testing.T) {
	srv, _ := rawUpstream(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, events)
	})
	var mu sync.Mutex
	var conns []brokenConn // guarded by mu
	var d net.Dialer
	c := &streamClient{dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		bc := brokenConn{conn, &atomic.Bool{}}
		mu.Lock()
		conns = append(conns, bc)
		mu.Unlock()
		return bc, nil
	}}
	t.Cleanup(c.closeIdle)
	for i := range 2 {
		callExpect(t, c, srv, i+1, events)
		mu.Lock()
		conns[0].broken.Store(true) // the pooled connection fails its next write
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 2 {
		t.Errorf("got %d connections, want 2: the second call retried once on a fresh one", len(conns))
	}
}
