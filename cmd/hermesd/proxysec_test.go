package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proxy"
)

// proxyGet sends GET /v1/models with key as the API key over a fresh
// connection and returns the status.
func proxyGet(t *testing.T, addr, key string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/v1/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyTokenAndBounds: hermesd creates the proxy token (0600) in its
// state directory and wants it on every request; rotate-token replaces it
// and honours the old one for the grace; over gateway.max_connections (of
// connections that presented the token) a connection is answered 503
// while the control API keeps answering and
// status shows the proxy's connections and limits.
func TestProxyTokenAndBounds(t *testing.T) {
	needsProcesses(t, "hermesd")
	const max, extra = 4, 6
	up := upstream(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, fmt.Sprintf("gateway: {listen: \"127.0.0.1:0\", max_connections: %d}\nproviders:\n  scripted:\n    base_url: %s/v1\n", max, up.URL))
	d := startDaemonWith(t, dir, daemonOpts{config: config})
	c := d.client()
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Proxy == nil || st.Proxy.Limits.MaxConnections != max || st.Proxy.Limits.MaxRequestBody != 64<<20 || st.Proxy.Limits.IdleTimeout != 120*time.Second {
		t.Fatalf("status proxy %+v, want limits with max_connections %d and the defaults", st.Proxy, max)
	}
	addr := st.Proxy.Listen

	state := filepath.Join(dir, "state")
	fi, err := os.Stat(proxy.TokenPath(state))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", err, fi)
	}
	tok, err := proxy.LoadToken(state, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := proxyGet(t, addr, ""); got != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", got)
	}
	if got := proxyGet(t, addr, tok); got != http.StatusOK {
		t.Errorf("with the token: %d, want 200", got)
	}

	rot, err := c.RotateProxyToken(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	next, err := proxy.LoadToken(state, false)
	if err != nil || next == tok || rot.File != proxy.TokenPath(state) || rot.OldValidUntil.Before(time.Now().Add(proxy.RotateGrace-time.Minute)) {
		t.Fatalf("rotation %+v: new token %v (changed: %v), want a new token and the old honoured ~10 min", rot, err, next != tok)
	}
	if a, b := proxyGet(t, addr, tok), proxyGet(t, addr, next); a != 200 || b != 200 {
		t.Errorf("after rotation: old %d, new %d, want both 200 within the grace", a, b)
	}

	// The connections of the requests above close on the proxy's side
	// after they answered: wait for them, then fill every slot.
	connsUntil := func(want int) {
		t.Helper()
		testkit.EventuallyOK(t, 10*time.Second, func() error {
			st, err := c.Status(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if st.Proxy.Connections != want {
				return fmt.Errorf("status shows %d proxy connections, want %d", st.Proxy.Connections, want)
			}
			return nil
		})
	}
	connsUntil(0)
	// The cap is held by connections that presented the token (those
	// that have not hold at most a quarter of it: proxy.TestStrangersDoNotStarveOwner).
	for range max {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /v1/models HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, next)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a connection within the cap: %d, want 200", resp.StatusCode)
		}
	}
	connsUntil(max)
	for range extra {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("a connection over the cap: %v, want a 503", err)
		}
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "gateway.max_connections") {
			t.Errorf("over the cap: %d %s, want 503 naming gateway.max_connections", resp.StatusCode, b)
		}
	}
	st, err = c.Status(t.Context())
	if err != nil {
		t.Fatalf("status with the proxy full: %v", err)
	}
	if st.Proxy.Connections != max || st.Proxy.Refused != extra {
		t.Errorf("status proxy: %d connections, %d refused; want %d and %d", st.Proxy.Connections, st.Proxy.Refused, max, extra)
	}
}
