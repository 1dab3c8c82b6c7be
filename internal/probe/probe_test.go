package probe

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/control"
)

func TestHandler(t *testing.T) {
	ok := control.Supervisor{Health: control.Health{State: control.HealthOK}}
	running := control.Unit{Name: "web", State: control.StateRunning, Ready: true}
	tests := []struct {
		name       string
		st         control.Status
		err        error
		live, read int
		body       string // in /readyz's body
	}{
		{"all ready", control.Status{Supervisor: ok, Units: []control.Unit{running, {Name: "init", State: control.StateDone}}}, nil, 200, 200, "ok"},
		{"idle supervisor, no units", control.Status{Supervisor: control.Supervisor{Health: control.Health{State: control.HealthIdle}}}, nil, 200, 200, "ok"},
		{"a unit starting", control.Status{Supervisor: ok, Units: []control.Unit{running, {Name: "db", State: control.StateStarting}}}, nil, 200, 503, "unit db: starting"},
		{"running, probe not passed", control.Status{Supervisor: ok, Units: []control.Unit{{Name: "db", State: control.StateRunning}}}, nil, 200, 503, "unit db: running (not ready)"},
		{"a unit failed", control.Status{Supervisor: ok, Units: []control.Unit{{Name: "db", State: control.StateFailed, Error: "exit 1"}}}, nil, 200, 503, "unit db: failed: exit 1"},
		{"stopped, disabled, jobs and adopted groups do not count", control.Status{Supervisor: ok, Units: []control.Unit{
			running,
			{Name: "a", State: control.StateStopped, Stopped: true},
			{Name: "b", State: control.StateDisabled, Disabled: true},
			{Name: "c", State: control.StateInactive, Job: &control.Job{}},
			{Name: "d", State: control.StateReleased},
		}}, nil, 200, 200, "ok"},
		{"supervisor not responding", control.Status{Supervisor: control.Supervisor{Health: control.Health{State: control.HealthNotResponding, Reason: "no reply in 5s"}}, Units: []control.Unit{running}}, nil, 503, 503, "death supervisor not responding"},
		{"supervisor failing", control.Status{Supervisor: control.Supervisor{Health: control.Health{State: control.HealthFailing, Reason: "cannot start /bin/sh"}}}, nil, 503, 503, "death supervisor failing"},
		{"loop does not answer", control.Status{}, context.DeadlineExceeded, 503, 503, "hermesd's loop did not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Handler(func(ctx context.Context) (control.Status, error) {
				if _, ok := ctx.Deadline(); !ok {
					t.Error("status read with no deadline")
				}
				return tt.st, tt.err
			})
			for path, want := range map[string]int{"/livez": tt.live, "/readyz": tt.read} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != want {
					t.Errorf("GET %s: got %d, want %d; body %q", path, rec.Code, want, rec.Body)
				}
				if path == "/readyz" && !strings.Contains(rec.Body.String(), tt.body) {
					t.Errorf("GET /readyz: body %q, want it to hold %q", rec.Body, tt.body)
				}
			}
		})
	}
}

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr   string
		remote bool
		want   error
	}{
		{"127.0.0.1:7413", false, nil},
		{"[::1]:7413", false, nil},
		{"localhost:7413", false, nil},
		{"0.0.0.0:7413", false, ErrNotLoopback},
		{"10.1.2.3:7413", false, ErrNotLoopback},
		{":7413", false, ErrNotLoopback},
		{"0.0.0.0:7413", true, nil},
		{":7413", true, nil},
	}
	for _, tt := range tests {
		err := CheckAddr(tt.addr, tt.remote)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("CheckAddr(%q, %v) = %v, want %v", tt.addr, tt.remote, err, tt.want)
		}
	}
	if err := CheckAddr("nonsense", true); err == nil {
		t.Error("CheckAddr(nonsense) = nil, want an error")
	}
}

func TestServeStops(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	ln := srv.Listener
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, Handler(func(context.Context) (control.Status, error) {
			return control.Status{Supervisor: control.Supervisor{Health: control.Health{State: control.HealthOK}}}, nil
		}))
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Errorf("GET /livez: %d %q, want 200 ok", resp.StatusCode, b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v, want nil", err)
	}
}
