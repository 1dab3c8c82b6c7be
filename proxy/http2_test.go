package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/openai/openai-go/v3/option"
)

// TestStreamClientHTTP2: a TLS provider that takes h2 gets every stream
// on one connection, streams in flight at once included, and the
// connection is kept for later calls; the streams' bodies arrive whole.
// A TLS provider without h2 gets HTTP/1.1 (TestStreamClientFraming).
func TestStreamClientHTTP2(t *testing.T) {
	const n = 3
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Proto != "HTTP/2.0" {
			t.Errorf("upstream got %s, want HTTP/2.0", r.Proto)
		}
		sseStart(w)
		if r.Header.Get("X-Wait") != "" {
			started.Done()
			<-release // every stream is open at once
		}
		io.WriteString(w, events)
	}))
	conns := &atomic.Int32{}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := clientFor(t, srv)

	call := func(h http.Header) error {
		resp, err := c.do(t.Context(), srv.URL+"/v1/chat/completions", h, []byte("{}"), func() {})
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil || string(got) != events || resp.ProtoMajor != 2 {
			t.Errorf("got %q, %v over HTTP/%d, want the events over HTTP/2", got, err, resp.ProtoMajor)
		}
		return nil
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := call(http.Header{"X-Wait": {"1"}}); err != nil {
				t.Error(err)
			}
		})
	}
	started.Wait()
	close(release)
	wg.Wait()
	if err := call(http.Header{}); err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("got %d connections for %d calls, %d of them at once, want 1", got, n+1, n)
	}
}

// TestStalledStreamCutAlone: over HTTP/2, streams share a connection, and
// a timeout layer that cuts one stream resets that stream alone: the
// other streams on the connection go on to their end, and the give-up
// breaker counts the cut for the stalled stream's session only. Each
// layer that watches a stream is tried: stale stream (keep-alives only)
// and socket read (no bytes at all).
func TestStalledStreamCutAlone(t *testing.T) {
	tests := []struct {
		name  string
		stall func(w http.ResponseWriter, r *http.Request)
		cut   string // in the stalled stream's error
	}{
		{name: "stale stream", cut: "stale stream timeout fired",
			stall: func(w http.ResponseWriter, r *http.Request) { every(r, -1, func() { send(w, ": ping\n\n") }) }},
		{name: "socket read", cut: "socket read timeout fired after",
			stall: func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, setup{tls: true, h2: true, scale: slowScale})
			addrs := make(chan string, 2)
			reset := make(chan struct{}) // the stalled stream's handler saw the proxy go
			h.up.play(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
				if r.ProtoMajor != 2 {
					t.Errorf("upstream got %s, want HTTP/2.0", r.Proto)
				}
				addrs <- r.RemoteAddr
				sseStart(w)
				send(w, chunk("content", "hel"))
				if r.Header.Get("X-Test") == "stall" {
					tt.stall(w, r)
					close(reset)
					return
				}
				// Content every tick until the other stream is cut, and
				// for a few ticks after: on a live connection.
				after := 3
				for after > 0 {
					select {
					case <-r.Context().Done():
						return
					case <-reset:
						after--
					case <-time.After(10 * time.Second):
						return
					case <-time.After(tick):
					}
					send(w, chunk("content", "x"))
				}
				send(w, chunk("content", "lo")+finish+"data: [DONE]\n\n")
			})

			stalled := make(chan error, 1)
			go func() {
				_, err := stream(t, h.client("/v1/", option.WithHeader("X-Test", "stall"), option.WithHeader(HeaderSession, "stalled")), "gpt-4o")
				stalled <- err
			}()
			first := <-addrs // the stalled stream is open before the other starts
			text, err := stream(t, h.client("/v1/", option.WithHeader(HeaderSession, "live")), "gpt-4o")
			if err != nil {
				t.Fatalf("the other stream: got %q and error %v, want it to end normally", text, errMessage(t, err))
			}
			if !strings.HasPrefix(text, "hel") || !strings.HasSuffix(text, "xxxlo") {
				t.Errorf("the other stream: got %q, want hel, content, and its end after the stalled stream's cut", text)
			}
			if second := <-addrs; second != first {
				t.Errorf("the streams came from %s and %s, want one connection", first, second)
			}
			err = testkit.Receive(t, 10*time.Second, stalled, "the stalled stream was not cut")
			if msg := errMessage(t, err); !strings.Contains(msg, tt.cut) {
				t.Errorf("the stalled stream: got %q, want %q", msg, tt.cut)
			}
			// The breaker counted the cut for the stalled stream's session
			// alone.
			streaks := map[string]int{}
			for _, st := range h.proxy.Status() {
				streaks[st.Session] = st.Streak
			}
			if streaks["stalled"] != 1 || streaks["live"] != 0 {
				t.Errorf("got breaker streaks %v, want stalled 1 and live 0", streaks)
			}
		})
	}
}

// TestHTTP2ConnectionKept: streams one after another reuse the HTTP/2
// connection; Serve's end closes it.
func TestHTTP2ConnectionKept(t *testing.T) {
	h := newHarness(t, setup{tls: true, h2: true, scale: slowScale})
	var addrs []string
	h.up.play(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		addrs = append(addrs, r.RemoteAddr) // one call at a time
		answer(w, r, body)
	})
	for i := range 3 {
		if text, err := stream(t, h.client("/v1/"), "gpt-4o"); err != nil || text != "hello" {
			t.Fatalf("call %d: got %q, %v; want hello", i+1, text, err)
		}
	}
	if addrs[0] != addrs[1] || addrs[1] != addrs[2] {
		t.Errorf("calls came from %v, want one connection", addrs)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for h.proxy.stream.reserve("https://"+h.up.srv.Listener.Addr().String()) != nil {
		if ctx.Err() != nil {
			t.Fatal("an HTTP/2 connection is still open after Serve returned")
		}
	}
}
