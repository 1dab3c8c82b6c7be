package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// plain is an HTTP client that adds no credentials.
func plain(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// openAIError is a refusal's body.
type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

// do sends method path with headers (Host is set as the request's Host)
// and body, and returns the status, the decoded error body (if any), and
// the response headers.
func do(t *testing.T, hc *http.Client, base, method, path string, headers map[string]string, body string) (int, openAIError, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e openAIError
	json.Unmarshal(b, &e)
	return resp.StatusCode, e, resp.Header
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`

// TestTokenRequired: every route wants the proxy token as the API key;
// without it, or with another, the answer is 401 with an OpenAI-style
// error and nothing goes upstream.
func TestTokenRequired(t *testing.T) {
	h := newHarness(t, setup{stale: time.Hour})
	h.up.play(answer)
	hc := plain(t)
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/models", ""},
		{http.MethodPost, "/v1/chat/completions", chatBody},
		{http.MethodPost, "/v1/responses", `{"model":"gpt-4o","input":"hi"}`},
		{http.MethodPost, "/run/nightly/v1/chat/completions", chatBody},
		{http.MethodGet, "/no/such/route", ""},
	}
	tests := []struct {
		name   string
		auth   string
		status int
		code   string
	}{
		{"no token", "", http.StatusUnauthorized, "proxy_token_missing"},
		{"wrong token", "Bearer sk-the-owners-real-key", http.StatusUnauthorized, "invalid_api_key"},
		{"token prefix", "Bearer " + testToken[:len(testToken)-1], http.StatusUnauthorized, "invalid_api_key"},
		{"not bearer", "Basic " + testToken, http.StatusUnauthorized, "invalid_api_key"},
	}
	for _, rt := range routes {
		for _, tt := range tests {
			t.Run(rt.path+"/"+tt.name, func(t *testing.T) {
				hdr := map[string]string{"Content-Type": "application/json"}
				if tt.auth != "" {
					hdr["Authorization"] = tt.auth
				}
				status, e, rh := do(t, hc, h.url, rt.method, rt.path, hdr, rt.body)
				if status != tt.status || e.Error.Code != tt.code {
					t.Errorf("got %d %q (%q), want %d %q", status, e.Error.Code, e.Error.Message, tt.status, tt.code)
				}
				if !strings.Contains(e.Error.Message, "hermesctl proxy env") {
					t.Errorf("message %q does not say how to get the token", e.Error.Message)
				}
				if rh.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without WWW-Authenticate")
				}
			})
		}
	}
	if n := h.up.calls.Load(); n != 0 {
		t.Fatalf("refused requests reached the upstream %d times, want 0", n)
	}

	h.proxy.RegisterRun("nightly", nil, "")
	for _, rt := range routes[:4] {
		status, e, _ := do(t, hc, h.url, rt.method, rt.path, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}, rt.body)
		if status != http.StatusOK {
			t.Errorf("%s %s with the token: got %d %+v, want 200", rt.method, rt.path, status, e)
		}
	}
	if status, e, _ := do(t, hc, h.url, "GET", "/v1/models", map[string]string{"Authorization": "Bearer " + testToken + ":agent-a"}, ""); status != http.StatusOK {
		t.Errorf("the token with a client label: got %d %+v, want 200", status, e)
	}
	if status, _, _ := do(t, hc, h.url, "GET", "/v1/models", map[string]string{"Authorization": "Bearer sk-other:" + testToken}, ""); status != http.StatusUnauthorized {
		t.Errorf("another key with the token as its label: got %d, want 401", status)
	}
	if n := h.up.calls.Load(); n != 3 {
		t.Errorf("with the token: %d upstream calls, want 3 (models are answered by the proxy)", n)
	}
	if _, auth := h.up.last(); auth != "Bearer upstream-key" {
		t.Errorf("upstream got Authorization %q, want the provider's key, never the proxy token", auth)
	}
}

// TestHostAndOrigin: a Host that is not loopback (DNS rebinding) and an
// Origin not listed in gateway.allowed_origins are refused with 403 before
// any upstream call, even with the right token; listed origins get CORS
// headers and their preflight.
func TestHostAndOrigin(t *testing.T) {
	h := newHarness(t, setup{origins: []string{"http://localhost:3000"}, stale: time.Hour})
	h.up.play(answer)
	hc := plain(t)
	port := h.url[strings.LastIndex(h.url, ":")+1:]
	tok := "Bearer " + testToken
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		status  int
		code    string
	}{
		{"rebinding name", "POST", map[string]string{"Host": "evil.example:" + port}, 403, "host_not_allowed"},
		{"rebinding name without port", "POST", map[string]string{"Host": "evil.example"}, 403, "host_not_allowed"},
		{"localhost subdomain", "POST", map[string]string{"Host": "localhost.evil.example:" + port}, 403, "host_not_allowed"},
		{"LAN address", "POST", map[string]string{"Host": "192.168.1.10:" + port}, 403, "host_not_allowed"},
		{"cross-site text/plain", "POST", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403, "origin_not_allowed"},
		{"null origin", "POST", map[string]string{"Origin": "null"}, 403, "origin_not_allowed"},
		{"origin on another port", "POST", map[string]string{"Origin": "http://localhost:3001"}, 403, "origin_not_allowed"},
		{"preflight of another origin", "OPTIONS", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, 403, "origin_not_allowed"},
		{"127.0.0.1", "POST", nil, 200, ""},
		{"localhost", "POST", map[string]string{"Host": "localhost:" + port}, 200, ""},
		{"LOCALHOST", "POST", map[string]string{"Host": "LOCALHOST:" + port}, 200, ""},
		{"other loopback", "POST", map[string]string{"Host": "127.0.0.2:" + port}, 200, ""},
		{"ipv6 loopback", "POST", map[string]string{"Host": "[::1]:" + port}, 200, ""},
		{"allowed origin", "POST", map[string]string{"Origin": "http://LOCALHOST:3000"}, 200, ""},
		{"allowed preflight", "OPTIONS", map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}, 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.up.calls.Load()
			hdr := map[string]string{"Content-Type": "application/json"}
			if tt.method != "OPTIONS" {
				hdr["Authorization"] = tok
			}
			for k, v := range tt.headers {
				hdr[k] = v
			}
			status, e, rh := do(t, hc, h.url, tt.method, "/v1/chat/completions", hdr, chatBody)
			if status != tt.status || e.Error.Code != tt.code {
				t.Fatalf("got %d %q (%q), want %d %q", status, e.Error.Code, e.Error.Message, tt.status, tt.code)
			}
			calls := h.up.calls.Load() - before
			if want := int32(0); tt.status == 200 {
				want = 1
				if calls != want {
					t.Errorf("upstream calls %d, want %d", calls, want)
				}
			} else if calls != want {
				t.Errorf("refused request reached the upstream %d times", calls)
			}
			if o := tt.headers["Origin"]; o != "" && tt.status < 300 && rh.Get("Access-Control-Allow-Origin") != o {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", rh.Get("Access-Control-Allow-Origin"), o)
			}
			if tt.status == 403 && !strings.Contains(e.Error.Message, "refused") {
				t.Errorf("message %q does not say why", e.Error.Message)
			}
		})
	}
	if status, e, _ := do(t, hc, h.url, "GET", "/v1/models", map[string]string{"Host": "evil.example", "Authorization": tok}, ""); status != 403 {
		t.Errorf("GET /v1/models with Host evil.example: got %d %+v, want 403", status, e)
	}
}

// TestRefusalLogNoSecret: a refused request is logged with why, never with
// the key it presented nor its body.
func TestRefusalLogNoSecret(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	h := newHarness(t, setup{logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(f, a...))
	}})
	hc := plain(t)
	const secret, bodySecret = "sk-proj-SECRETSECRETSECRET", "BODY-SECRET-PROMPT"
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + bodySecret + `"}]}`
	for _, hdr := range []map[string]string{
		{"Authorization": "Bearer " + secret},
		{"Authorization": secret},
		{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example"},
		{"Authorization": "Bearer " + testToken, "Host": "evil.example"},
	} {
		if status, _, _ := do(t, hc, h.url, "POST", "/v1/chat/completions", hdr, body); status/100 != 4 {
			t.Fatalf("%v: got %d, want a refusal", hdr, status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	log := strings.Join(lines, "\n")
	if strings.Count(log, "refused POST") != 4 {
		t.Errorf("log has %d refusals, want 4:\n%s", strings.Count(log, "refused POST"), log)
	}
	for _, s := range []string{secret, bodySecret, testToken} {
		if strings.Contains(log, s) {
			t.Errorf("the log holds %q:\n%s", s, log)
		}
	}
	for _, why := range []string{"not the proxy token", "not a bearer token", `Origin "https://evil.example"`, `Host "evil.example"`} {
		if !strings.Contains(log, why) {
			t.Errorf("the log does not say %q:\n%s", why, log)
		}
	}
}

// TestRotateToken: after SetToken with a grace, the new token works at
// once and the old one until the grace ends, then no more.
func TestRotateToken(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(t, setup{now: clock})
	hc := plain(t)
	models := func(tok string) int {
		status, _, _ := do(t, hc, h.url, "GET", "/v1/models", map[string]string{"Authorization": "Bearer " + tok}, "")
		return status
	}
	const next = "hermes-NEXTTOKEN0123456789"
	h.proxy.SetToken(next, RotateGrace)
	if a, b := models(testToken), models(next); a != 200 || b != 200 {
		t.Fatalf("within the grace: old %d, new %d, want 200 and 200", a, b)
	}
	mu.Lock()
	now = now.Add(RotateGrace)
	mu.Unlock()
	if a, b := models(testToken), models(next); a != 401 || b != 200 {
		t.Errorf("after the grace: old %d, new %d, want 401 and 200", a, b)
	}
	h.proxy.SetToken(testToken, 0)
	if a, b := models(testToken), models(next); a != 200 || b != 401 {
		t.Errorf("rotated without grace: new %d, old %d, want 200 and 401", a, b)
	}
}

// TestLoadToken: the token file is created once, 0600, never through a
// planted link, and a file others can read or that is not ours is refused.
func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	tok, err := LoadToken(dir, false)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("LoadToken without create on an empty dir: %q, %v; want a does-not-exist error", tok, err)
	}
	tok, err = LoadToken(dir, true)
	if err != nil || !strings.HasPrefix(tok, "hermes-") {
		t.Fatalf("LoadToken create: %q, %v", tok, err)
	}
	fi, err := os.Stat(TokenPath(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if again, err := LoadToken(dir, true); err != nil || again != tok {
		t.Errorf("second LoadToken: %q, %v; want the same token", again, err)
	}
	next := NewToken()
	if err := SaveToken(dir, next); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadToken(dir, false); err != nil || got != next {
		t.Errorf("after SaveToken: %q, %v; want %q", got, err, next)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("state dir holds %d files after SaveToken, want the token only", len(ents))
	}

	t.Run("planted link", func(t *testing.T) {
		dir := t.TempDir()
		victim := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, TokenPath(dir)); err != nil {
			t.Fatal(err)
		}
		_, err := LoadToken(dir, true)
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("LoadToken through a link: %v, want a symbolic link error", err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
			t.Errorf("the link's target was changed: %q", b)
		}
		dangling := t.TempDir()
		os.Symlink(filepath.Join(dangling, "nowhere"), TokenPath(dangling))
		if _, err := LoadToken(dangling, true); err == nil {
			t.Errorf("LoadToken through a dangling link: created it")
		}
		if _, err := os.Lstat(filepath.Join(dangling, "nowhere")); err == nil {
			t.Errorf("a token was written through a dangling link")
		}
	})
	t.Run("readable by others", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(TokenPath(dir), []byte(NewToken()+"\n"), 0o644)
		if _, err := LoadToken(dir, true); err == nil || !strings.Contains(err.Error(), "other users") {
			t.Errorf("LoadToken of a 0644 file: %v, want a refusal naming other users", err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(TokenPath(dir), []byte("short\n"), 0o600)
		if _, err := LoadToken(dir, true); err == nil || !strings.Contains(err.Error(), "does not hold a token") {
			t.Errorf("LoadToken of a malformed file: %v", err)
		}
	})
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the file to another user")
		}
		dir := t.TempDir()
		os.WriteFile(TokenPath(dir), []byte(NewToken()+"\n"), 0o600)
		if err := os.Chown(TokenPath(dir), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadToken(dir, true); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("LoadToken of another user's file: %v", err)
		}
	})
}
