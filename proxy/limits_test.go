package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermes-units/hermes/internal/testkit"
)

// until waits for cond, or fails the test after a generous deadline (what
// it waits for is another goroutine's work, not a timer).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, what, cond)
}

func dial(t *testing.T, url string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readResponse reads one HTTP response from c, within 10 s.
func readResponse(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// closedByServer waits (10 s at most) for the server to close c, reading
// and dropping whatever it sends first.
func closedByServer(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: the proxy kept the connection open (read %q)", what, b)
	}
	return string(b)
}

// TestConnectionCap: over gateway.max_connections, a connection is
// answered 503 and closed at once, while the ones within the cap (each
// has presented the token) stay served; a slot given back serves the next
// connection.
func TestConnectionCap(t *testing.T) {
	const max, extra = 4, 6
	h := newHarness(t, setup{limits: Limits{MaxConns: max}})
	idle := make([]net.Conn, max)
	for i := range idle {
		idle[i] = dial(t, h.url)
		fmt.Fprintf(idle[i], "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
		if resp, body := readResponse(t, idle[i]); resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d: got %d %s, want 200", i+1, resp.StatusCode, body)
		}
	}
	until(t, fmt.Sprintf("%d connections open", max), func() bool { return h.proxy.Usage().Conns == max })
	for i := range extra {
		c := dial(t, h.url)
		resp, body := readResponse(t, c)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "too_many_connections") || !strings.Contains(body, "gateway.max_connections") {
			t.Errorf("connection %d over the cap: got %d %s, want 503 too_many_connections", i+1, resp.StatusCode, body)
		}
		closedByServer(t, c, "a refused connection")
	}
	if u := h.proxy.Usage(); u.Conns != max || u.Refused != extra {
		t.Errorf("usage %+v, want %d open and %d refused", u, max, extra)
	}
	// The connections within the cap are served.
	fmt.Fprintf(idle[0], "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	if resp, body := readResponse(t, idle[0]); resp.StatusCode != http.StatusOK {
		t.Errorf("a connection within the cap: got %d %s, want 200", resp.StatusCode, body)
	}
	idle[1].Close()
	until(t, "a slot given back", func() bool { return h.proxy.Usage().Conns == max-1 })
	c := dial(t, h.url)
	fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	if resp, body := readResponse(t, c); resp.StatusCode != http.StatusOK {
		t.Errorf("a connection after one closed: got %d %s, want 200", resp.StatusCode, body)
	}
}

// TestStrangersDoNotStarveOwner: connections that never present the
// token (a stranger's, idle or sending a request without it) hold at most
// a quarter of the cap: every one of the owner's requests, each on a new
// connection, is served while the stranger holds every slot it can, and
// the stranger's idle connections are closed early.
func TestStrangersDoNotStarveOwner(t *testing.T) {
	const max, strangers, owner = 16, 64, 20
	h := newHarness(t, setup{limits: Limits{MaxConns: max}})
	h.up.play(answer)
	h.proxy.conns.mu.Lock()
	h.proxy.conns.idle = 3 * time.Second
	h.proxy.conns.mu.Unlock()
	held := make([]net.Conn, 0, strangers)
	for i := range strangers {
		c := dial(t, h.url)
		if i%2 == 1 { // half of them start a request and never finish it
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		}
		held = append(held, c)
	}
	until(t, "the stranger's connections accepted", func() bool { return h.proxy.Usage().Conns >= max/4 })
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := openai.NewClient(option.WithBaseURL(h.url+"/v1/"), option.WithAPIKey(testToken), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: tr}))
	served := 0
	for i := range owner {
		if _, err := c.Chat.Completions.New(t.Context(), chatParams("gpt-4o")); err != nil {
			t.Errorf("owner's request %d: %v", i+1, err)
			continue
		}
		served++
		// The stranger takes back what it can between the owner's calls.
		held = append(held, dial(t, h.url))
	}
	if served != owner {
		t.Errorf("served %d of the owner's %d requests while a stranger held every slot it could, want all", served, owner)
	}
	// The stranger's connections are those that never presented the
	// token. Usage counts the owner's too, and the owner's last one may
	// not be given back yet: its client closed it, and the proxy sees
	// the close a moment later.
	h.proxy.conns.mu.Lock()
	pre := h.proxy.conns.pre.Len()
	h.proxy.conns.mu.Unlock()
	if pre > max/4 {
		t.Errorf("the stranger holds %d connections, want at most a quarter of the cap (%d); usage %+v", pre, max/4, h.proxy.Usage())
	}
	// Unauthenticated connections are closed after the (shortened) idle
	// time, the latest one included.
	closedByServer(t, held[len(held)-1], "an idle connection without the token")
	until(t, "the stranger's connections closed", func() bool { return h.proxy.Usage().Conns == 0 })
}

// TestConnectionCapFitsDescriptors: the cap is lowered so that the proxy's
// descriptors leave ReservedFDs to the rest of hermesd.
func TestConnectionCapFitsDescriptors(t *testing.T) {
	tests := []struct {
		fds  uint64
		want int
	}{
		{1 << 20, 512},
		{1024, (1024 - ReservedFDs - idleUpstream - 1) / FDsPerConn},
		{300, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.fds), func(t *testing.T) {
			var logged string
			o := testOptions(t)
			o.FDLimit = tt.fds
			o.Logf = func(f string, a ...any) { logged += fmt.Sprintf(f, a...) }
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Limits().MaxConns
			if got != tt.want {
				t.Errorf("MaxConns %d, want %d", got, tt.want)
			}
			if tt.want > 1 && Descriptors(got)+ReservedFDs > int(tt.fds) {
				t.Errorf("Descriptors(%d) = %d leaves less than %d of %d", got, Descriptors(got), ReservedFDs, tt.fds)
			}
			if (got < 512) != strings.Contains(logged, "lowered from 512") {
				t.Errorf("log %q: want a line exactly when the cap is lowered", logged)
			}
		})
	}
}

// jsonOfLength is a chat request body of exactly n bytes.
func jsonOfLength(n int) string {
	head, tail := `{"model":"gpt-4o","messages":[{"role":"user","content":"`, `"}]}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// TestBodiesInFlight: the request body bytes held at once stay within
// gateway.max_bodies_in_flight: a request that declares its length waits
// for room, a chunked one without room is refused 503, one over
// max_request_body is refused 413 before its body is read, and the room
// is given back when a call has gone upstream.
func TestBodiesInFlight(t *testing.T) {
	const flight = 256 << 10
	h := newHarness(t, setup{stale: time.Hour, limits: Limits{MaxBody: flight, MaxInFlight: flight, BodyReadTimeout: time.Minute}})
	h.up.play(answer)
	auth := "Authorization: Bearer " + testToken + "\r\n"

	// A holds all the room: it declares flight bytes and sends a part.
	bodyA := jsonOfLength(flight)
	a := dial(t, h.url)
	fmt.Fprintf(a, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", auth, len(bodyA), bodyA[:1000])
	until(t, "A's body counted", func() bool { return h.proxy.Usage().BodyBytes == flight })

	// A chunked request finds no room: 503 at once, nothing upstream.
	b := dial(t, h.url)
	fmt.Fprintf(b, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", auth, len(chatBody), chatBody)
	if resp, body := readResponse(t, b); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "bodies_in_flight") {
		t.Errorf("chunked request without room: got %d %s, want 503 bodies_in_flight", resp.StatusCode, body)
	}
	// Over max_request_body: 413 from the header alone.
	big := dial(t, h.url)
	fmt.Fprintf(big, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %d\r\n\r\n", auth, flight+1)
	if resp, body := readResponse(t, big); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "gateway.max_request_body") {
		t.Errorf("body over the cap: got %d %s, want 413", resp.StatusCode, body)
	}
	// C declares its length and waits for room.
	cdone := make(chan int, 1)
	go func() {
		status, _, _ := do(t, h.hc, h.url, "POST", "/v1/chat/completions", map[string]string{"Content-Type": "application/json"}, chatBody)
		cdone <- status
	}()
	if u := h.proxy.Usage(); u.BodyBytes != flight {
		t.Errorf("while A holds the room: %d bytes held, want %d", u.BodyBytes, flight)
	}
	io.WriteString(a, bodyA[1000:])
	if resp, body := readResponse(t, a); resp.StatusCode != http.StatusOK {
		t.Errorf("A: got %d %s, want 200", resp.StatusCode, body)
	}
	if st := <-cdone; st != http.StatusOK {
		t.Errorf("C, which waited for room: got %d, want 200", st)
	}
	until(t, "the room given back", func() bool { return h.proxy.Usage().BodyBytes == 0 })
	if u := h.proxy.Usage(); u.PeakBodyByte > flight {
		t.Errorf("peak body bytes %d, over the cap %d", u.PeakBodyByte, flight)
	}
	if n := h.up.calls.Load(); n != 2 {
		t.Errorf("upstream calls %d, want 2 (A and C)", n)
	}
}

// TestSlowClientsCut: a connection that sends its headers, its body, or
// its next request too slowly is closed: one byte at a time cannot hold a
// connection (and its descriptor) for ever.
func TestSlowClientsCut(t *testing.T) {
	const short = 300 * time.Millisecond
	h := newHarness(t, setup{limits: Limits{ReadHeaderTimeout: short, BodyReadTimeout: short, IdleTimeout: short}})
	auth := "Authorization: Bearer " + testToken + "\r\n"

	t.Run("headers", func(t *testing.T) {
		c := dial(t, h.url)
		io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		closedByServer(t, c, "headers never finished")
	})
	t.Run("body", func(t *testing.T) {
		c := dial(t, h.url)
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %d\r\n\r\n%s", auth, len(chatBody), chatBody[:5])
		out := closedByServer(t, c, "body never finished")
		if !strings.Contains(out, "408") || !strings.Contains(out, "gateway.body_read_timeout") {
			t.Errorf("got %q, want a 408 naming gateway.body_read_timeout", out)
		}
		until(t, "its room given back", func() bool { return h.proxy.Usage().BodyBytes == 0 })
	})
	t.Run("idle", func(t *testing.T) {
		c := dial(t, h.url)
		fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", auth)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("idle kept-alive connection: read %v, want EOF (closed by the proxy)", err)
		}
	})
	until(t, "every connection closed", func() bool { return h.proxy.Usage().Conns == 0 })
}

// readSizes records the size of every Read asked of it.
type readSizes struct {
	r     io.Reader
	sizes []int
}

func (s *readSizes) Read(p []byte) (int, error) {
	s.sizes = append(s.sizes, len(p))
	return s.r.Read(p)
}

// TestReadBodyBuffers: readBody reads into the body's own room, and
// through a small piece past it: a small request costs no large buffer,
// however many are in flight.
func TestReadBodyBuffers(t *testing.T) {
	p, err := New(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		size     int
		declared bool
	}{
		{"small, declared", len(chatBody), true},
		{"small, chunked", len(chatBody), false},
		{"large, declared", 100 << 10, true},
		{"large, chunked", 100 << 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := jsonOfLength(tt.size)
			rs := &readSizes{r: strings.NewReader(body)}
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", rs)
			r.ContentLength = -1
			if tt.declared {
				r.ContentLength = int64(len(body))
			}
			raw, release, err := p.readBody(httptest.NewRecorder(), r)
			if err != nil {
				t.Fatal(err)
			}
			release()
			if string(raw) != body {
				t.Fatalf("got %d bytes, want the %d of the body", len(raw), len(body))
			}
			limit := max(len(body), bodyPiece) // the body's room, or a piece
			for i, n := range rs.sizes {
				if n > limit {
					t.Errorf("read %d asked for %d bytes, want at most %d", i+1, n, limit)
				}
			}
		})
	}
}

// Descriptors is how many descriptors a proxy capped at conns client
// connections may hold at once: theirs, their calls' upstream connections,
// the idle upstream pools and the listener.
func Descriptors(conns int) int { return FDsPerConn*conns + idleUpstream + 1 }
