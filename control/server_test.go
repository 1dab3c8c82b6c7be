package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/internal/testkit"
)

func sampleStatus() Status {
	return Status{
		Daemon:     Daemon{PID: 10, Role: "gateway", Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		Supervisor: Supervisor{PID: 11, Groups: 2, Mode: "cgroup", Health: Health{State: HealthOK}},
		Units: []Unit{
			{Name: "web", State: "running", PID: 100, PGID: 100, Ownership: "owned", Ready: true, Uptime: time.Minute, Ports: []int{8080}},
			{Name: "job", State: "failed", Ownership: "adoptable", Restarts: 3, Adopted: true, Error: "exit status 1"},
		},
		ConfigErrors: []ConfigError{{File: "/u/bad.yaml", Line: 3, Column: 7, Message: `unknown key "comand"`}},
	}
}

// TestStatusContract checks the JSON of SPEC §8 as a script would see it:
// the required keys exist, with the required JSON types.
func TestStatusContract(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status Status
	}{
		{"full", sampleStatus()},
		{"empty", Status{}}, // nil slices must still be arrays
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, NewServer(&fakeBackend{status: tc.status}, Options{}))
			raw := getRaw(t, s.path, "/v1/status")
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("status is not a JSON object: %v\n%s", err, raw)
			}
			sup, ok := m["supervisor"].(map[string]any)
			if !ok {
				t.Fatalf("supervisor is %T, want object", m["supervisor"])
			}
			checkKeys(t, "supervisor", sup, map[string]string{"pid": "number", "groups": "number", "mode": "string"})
			units, ok := m["units"].([]any)
			if !ok {
				t.Fatalf("units is %T, want array", m["units"])
			}
			if got, want := len(units), len(tc.status.Units); got != want {
				t.Errorf("got %d units, want %d", got, want)
			}
			for i, u := range units {
				um, ok := u.(map[string]any)
				if !ok {
					t.Fatalf("units[%d] is %T, want object", i, u)
				}
				checkKeys(t, fmt.Sprintf("units[%d]", i), um, map[string]string{
					"name": "string", "state": "string", "pid": "number", "pgid": "number", "ownership": "string",
					"restarts": "number", "adopted": "bool", "ready": "bool", "error": "string",
				})
			}
			ces, ok := m["config_errors"].([]any)
			if !ok {
				t.Fatalf("config_errors is %T, want array", m["config_errors"])
			}
			for i, ce := range ces {
				cm, ok := ce.(map[string]any)
				if !ok {
					t.Fatalf("config_errors[%d] is %T, want object", i, ce)
				}
				checkKeys(t, fmt.Sprintf("config_errors[%d]", i), cm, map[string]string{"file": "string", "line": "number", "column": "number", "message": "string"})
			}

			// And the typed client sees the same values.
			got, err := s.client.Status(t.Context())
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if want := normalize(tc.status); !reflect.DeepEqual(got, want) {
				t.Errorf("Status over the socket:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

func checkKeys(t *testing.T, where string, m map[string]any, want map[string]string) {
	t.Helper()
	for k, typ := range want {
		v, ok := m[k]
		if !ok {
			t.Errorf("%s: key %q missing", where, k)
			continue
		}
		var got string
		switch v.(type) {
		case float64:
			got = "number"
		case string:
			got = "string"
		case bool:
			got = "bool"
		default:
			got = fmt.Sprintf("%T", v)
		}
		if got != typ {
			t.Errorf("%s.%s is a %s, want %s", where, k, got, typ)
		}
	}
}

// getRaw fetches path from the socket with a plain http.Client.
func getRaw(t *testing.T, socket, path string) []byte {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x"+path, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := &fakeBackend{
		status: sampleStatus(),
		plan:   Plan{Start: []string{"new"}, Restart: []string{"web"}, Keep: []string{"db"}, Errors: []ConfigError{{File: "f", Line: 1, Column: 2, Message: "m"}}},
		logs:   map[string]string{"web": "/state/logs/web.log"},
	}
	s := serve(t, NewServer(b, Options{}))
	c := s.client
	ctx := t.Context()

	if _, err := c.Status(ctx, "web", "a b/c"); err != nil {
		t.Errorf("Status: %v", err)
	}
	for _, f := range []func(context.Context, string) error{c.Start, c.Stop, c.Restart} {
		if err := f(ctx, "web"); err != nil {
			t.Errorf("action: %v", err)
		}
	}
	plan, err := c.Reload(ctx, true)
	if err != nil {
		t.Errorf("Reload: %v", err)
	}
	if !reflect.DeepEqual(plan, normalizePlan(b.plan)) {
		t.Errorf("Reload: got %+v, want %+v", plan, normalizePlan(b.plan))
	}
	if _, err := c.Reload(ctx, false); err != nil {
		t.Errorf("Reload: %v", err)
	}
	p, err := c.LogPath(ctx, "web")
	if err != nil || p != "/state/logs/web.log" {
		t.Errorf("LogPath: got %q, %v; want /state/logs/web.log, nil", p, err)
	}
	want := []string{"status [web a b/c]", "start web", "stop web", "restart web", "reload dry_run=true", "reload dry_run=false", "log web"}
	if got := b.calls.All(); !reflect.DeepEqual(got, want) {
		t.Errorf("backend calls:\ngot  %q\nwant %q", got, want)
	}
}

// TestErrorBodyOfOlderDaemon: an ErrorBody with no summary (a daemon
// older than the split) is all summary, with no detail.
func TestErrorBodyOfOlderDaemon(t *testing.T) {
	resp := &http.Response{StatusCode: http.StatusConflict}
	ce := answerError(resp, []byte(`{"error":"web.yaml is invalid: conflict","code":"conflict"}`), "")
	if ce.Message != "web.yaml is invalid: conflict" || ce.Summary != ce.Message || ce.Detail != "" {
		t.Errorf("got message %q, summary %q, detail %q; want the whole text as message and summary, no detail", ce.Message, ce.Summary, ce.Detail)
	}
	if !errors.Is(ce, ErrConflict) {
		t.Errorf("got %v, want it to match ErrConflict", ce)
	}
}

// TestErrorsAcrossSocket checks that the client's errors match the
// backend's sentinels, and only those.
func TestErrorsAcrossSocket(t *testing.T) {
	for _, tc := range []struct {
		name            string
		err             error
		want            error // nil: matches no sentinel
		code            string
		status          int
		deadline        bool   // errors.Is(err, context.DeadlineExceeded) must be false anyway
		summary, detail string // the split; summary "": the whole text, no detail
	}{
		{"unknown unit", fmt.Errorf("%w %q", ErrUnknownUnit, "web"), ErrUnknownUnit, CodeUnknownUnit, http.StatusNotFound, false, "", ""},
		{"conflict", fmt.Errorf("web.yaml is invalid: %w", ErrConflict), ErrConflict, CodeConflict, http.StatusConflict, false, "", ""},
		{"bad request", ErrBadRequest, ErrBadRequest, CodeBadRequest, http.StatusBadRequest, false, "", ""},
		{"denied", ErrDenied, ErrDenied, CodeDenied, http.StatusForbidden, false, "", ""},
		{"timeout", fmt.Errorf("stop web: %w", context.DeadlineExceeded), nil, CodeTimeout, http.StatusGatewayTimeout, true, "", ""},
		{"other", errors.New("disk on fire"), nil, CodeInternal, http.StatusInternalServerError, false, "", ""},
		{"detail", fmt.Errorf("start web: %w", &diag.Error{Kind: ErrConflict, Where: "unit web", What: "needs cgroup mode", Fix: "run hermesd with --supervisor-mode cgroup"}),
			ErrConflict, CodeConflict, http.StatusConflict, false,
			"start web: conflicting state: unit web: needs cgroup mode", "run hermesd with --supervisor-mode cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, NewServer(&fakeBackend{err: tc.err}, Options{}))
			err := s.client.Start(t.Context(), "web")
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %T %v, want *control.Error", err, err)
			}
			if ce.Code != tc.code || ce.Status != tc.status {
				t.Errorf("got code %q status %d, want %q %d", ce.Code, ce.Status, tc.code, tc.status)
			}
			if ce.Message != tc.err.Error() {
				t.Errorf("got message %q, want %q", ce.Message, tc.err.Error())
			}
			if tc.summary == "" {
				tc.summary = tc.err.Error()
			}
			if ce.Summary != tc.summary || ce.Detail != tc.detail {
				t.Errorf("got summary %q, detail %q; want %q, %q", ce.Summary, ce.Detail, tc.summary, tc.detail)
			}
			for _, sen := range []error{ErrUnknownUnit, ErrConflict, ErrBadRequest, ErrDenied, context.DeadlineExceeded} {
				if got, want := errors.Is(err, sen), sen == tc.want; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v", sen, got, want)
				}
			}
		})
	}
}

// TestStopWaits checks that Stop returns only after the backend's Stop has,
// and that a client giving up cancels the backend's context.
func TestStopWaits(t *testing.T) {
	t.Run("returns after the group is empty", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		var empty atomic.Bool
		b := &fakeBackend{stop: func(ctx context.Context, unit string) error {
			close(entered)
			<-release
			empty.Store(true)
			return nil
		}}
		s := serve(t, NewServer(b, Options{}))
		done := make(chan error, 1)
		go func() { done <- s.client.Stop(t.Context(), "web") }()
		<-entered
		if err, ok := testkit.Ready(done); ok {
			t.Fatalf("Stop returned %v while the backend was still stopping", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if !empty.Load() {
			t.Error("Stop returned before the backend's Stop did")
		}
	})
	t.Run("client ctx cancels the backend", func(t *testing.T) {
		entered, backendDone := make(chan struct{}), make(chan error, 1)
		b := &fakeBackend{stop: func(ctx context.Context, unit string) error {
			close(entered)
			<-ctx.Done()
			backendDone <- ctx.Err()
			return ctx.Err()
		}}
		s := serve(t, NewServer(b, Options{}))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.client.Stop(ctx, "web") }()
		<-entered
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Stop: got %v, want context.Canceled", err)
		}
		if err := <-backendDone; !errors.Is(err, context.Canceled) {
			t.Errorf("backend ctx: got %v, want context.Canceled", err)
		}
	})
}

// TestServeShutdown checks that Serve lets a request in flight finish, and
// that its bound cancels one that does not.
func TestServeShutdown(t *testing.T) {
	t.Run("in-flight request finishes", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		b := &fakeBackend{stop: func(ctx context.Context, unit string) error {
			close(entered)
			<-release
			return ctx.Err() // nil unless Serve cut it short
		}}
		s := serve(t, NewServer(b, Options{ShutdownTimeout: time.Hour}))
		done := make(chan error, 1)
		go func() { done <- s.client.Stop(t.Context(), "web") }()
		<-entered
		served := make(chan error, 1)
		go func() { served <- s.stopServing() }()
		close(release)
		if err := <-done; err != nil {
			t.Errorf("Stop during shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	t.Run("bound cancels a stuck request", func(t *testing.T) {
		entered := make(chan struct{})
		var cancelled atomic.Bool
		b := &fakeBackend{stop: func(ctx context.Context, unit string) error {
			close(entered)
			<-ctx.Done()
			cancelled.Store(true)
			return ctx.Err()
		}}
		s := serve(t, NewServer(b, Options{ShutdownTimeout: time.Millisecond}))
		done := make(chan error, 1)
		go func() { done <- s.client.Stop(t.Context(), "web") }()
		<-entered
		if err := s.stopServing(); err != nil {
			t.Errorf("Serve: %v", err)
		}
		// Serve has joined the request's goroutine, so the backend has returned.
		if !cancelled.Load() {
			t.Error("Serve returned before the stuck request's context was cancelled and it returned")
		}
		if err := <-done; err == nil {
			t.Error("Stop cut short by shutdown returned nil, want an error")
		}
	})
}

func TestNoRoute(t *testing.T) {
	s := serve(t, NewServer(&fakeBackend{}, Options{}))
	var eb ErrorBody
	if err := json.Unmarshal(getRaw(t, s.path, "/v9/status"), &eb); err != nil {
		t.Fatal(err)
	}
	if eb.Code != CodeNoRoute {
		t.Errorf("got code %q, want %q", eb.Code, CodeNoRoute)
	}
}

func TestNotRunning(t *testing.T) {
	t.Run("no socket", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hermesd.sock")
		_, err := Dial(path)
		if !errors.Is(err, ErrNotRunning) {
			t.Fatalf("Dial: got %v, want ErrNotRunning", err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the socket %s", err, path)
		}
	})
	t.Run("stale socket", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hermesd.sock")
		staleSocket(t, path)
		c, err := Dial(path)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer c.Close()
		if _, err := c.Status(t.Context()); !errors.Is(err, ErrNotRunning) {
			t.Errorf("Status: got %v, want ErrNotRunning", err)
		}
	})
}

// staleSocket leaves a socket at path that nobody listens on, as a daemon
// killed with SIGKILL does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestStatusAnswerSized: a status of hundreds of units is answered in one
// piece that says its length (the client reads it into a buffer of that
// size), and the client still reads an answer without one, as a daemon
// that sends it in chunks gives.
func TestStatusAnswerSized(t *testing.T) {
	var st Status
	for i := range 300 {
		st.Units = append(st.Units, Unit{Name: fmt.Sprintf("unit-%03d", i), State: StateRunning, PID: 1000 + i, Ownership: "owned", Log: "/state/logs/unit.log"})
	}
	want := normalize(st)
	s := serve(t, NewServer(&fakeBackend{status: st}, Options{}))
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.path)
	}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/v1/status", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != int64(len(body)) || len(body) < 300*50 {
		t.Errorf("status of 300 units: Content-Length %d, body %d bytes; want the body's length", resp.ContentLength, len(body))
	}
	if got, err := s.client.Status(t.Context()); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Status: %d units, err %v; want the %d served", len(got.Units), err, len(want.Units))
	}

	// An answer in chunks, with no length.
	path := filepath.Join(t.TempDir(), "chunked.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush()
		_ = json.NewEncoder(w).Encode(want)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Status(t.Context()); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Status of an answer in chunks: %d units, err %v; want the %d served", len(got.Units), err, len(want.Units))
	}
}
