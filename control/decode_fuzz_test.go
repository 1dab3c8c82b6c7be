package control

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/units"
)

// richStatus is a status with every kind of field a row can carry set.
func richStatus() Status {
	exit := 143
	return Status{
		Daemon:     Daemon{PID: 42, Role: units.RoleGateway, Started: time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), Units: "/u", State: "/s", Metrics: "127.0.0.1:9"},
		Supervisor: Supervisor{PID: 43, Groups: 2, Mode: units.ModeCgroup, Health: Health{State: HealthOK}, Orphans: []int{7}},
		Units: []Unit{
			{Name: "web", State: StateRunning, PID: 100, PGID: 100, Cgroup: "/sys/fs/cgroup/h/web", Ownership: units.Owned, Ready: true,
				Uptime: time.Minute, Ports: []int{8080}, RSS: 4096, Log: "/s/logs/web.log", Type: units.Simple, Probe: "tcp 127.0.0.1:8080",
				After: []string{"db"}, Requires: []string{"db"}, Timeouts: &Timeouts{Start: time.Second, Stop: 3 * time.Second}},
			{Name: "job", State: StateFailed, ExitStatus: &exit, Error: "exited with status 143; \"quoted\"\n\tand ☃",
				Job: &Job{Schedule: "@every 1m", Next: time.Date(2026, 12, 7, 11, 1, 0, 0, time.UTC), Result: JobResult("failed"),
					Runs: map[JobResult]int{JobResult("success"): 3, JobResult("failed"): 1}, Duration: time.Second}},
		},
		ConfigErrors: []ConfigError{},
		Recovery:     &Recovery{Ended: []EndedGroup{{Unit: "web", PID: 9, PGID: 9, Owner: 8}}, Leftovers: 1},
		Owned:        []OwnedGroup{{Name: "o", PGID: 5, PID: 5, Ownership: units.Owned, State: OwnedState("kept")}},
	}
}

// FuzzDecodeAnswer holds decodeAnswer to encoding/json on a status
// answer: it never panics, it refuses what encoding/json refuses, and
// what it accepts it decodes to the same value. Run longer with
// go test -run '^$' -fuzz FuzzDecodeAnswer -fuzztime 60s ./control
func FuzzDecodeAnswer(f *testing.F) {
	rich, err := json.Marshal(richStatus())
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(rich), `{}`, `{"units":null}`, `{"units":[{"name":"a","pid":"1"}]}`,
		`{"units":[{"state":"nonsense"}]}`, `{"daemon":{"role":"king"}}`, `{"units":[{"name":"\ud800"}]}`,
		`{"Units":[{"NAME":"a"}]}`, `{"units":[]} x`, `{"units":[{"uptime_ns":1e3}]}`, `{"units":[`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got Status
		wantErr := json.Unmarshal(data, &want)
		gotErr := decodeAnswer("GET", pathStatus, data, &got)
		switch {
		case (wantErr == nil) != (gotErr == nil):
			t.Fatalf("encoding/json says %v; decodeAnswer says %v", wantErr, gotErr)
		case wantErr == nil && !reflect.DeepEqual(want, got):
			t.Fatalf("decoded differently:\nencoding/json %+v\ndecodeAnswer  %+v", want, got)
		}
	})
}

// TestDecodeAnswerRefusal: an answer decodeAnswer refuses is refused in
// encoding/json's words, which name the field by its path.
func TestDecodeAnswerRefusal(t *testing.T) {
	data := []byte(`{"units":[{"name":"a","pid":"12"}]}`)
	var st Status
	err := decodeAnswer("GET", pathStatus, data, &st)
	want := json.Unmarshal(data, new(Status))
	if err == nil || want == nil {
		t.Fatalf("decodeAnswer: %v; encoding/json: %v; want both to refuse", err, want)
	}
	if !errors.Is(err, want) && !strings.Contains(err.Error(), want.Error()) {
		t.Errorf("decodeAnswer's refusal %q does not hold encoding/json's %q", err, want)
	}
	if !strings.Contains(err.Error(), "GET "+pathStatus) {
		t.Errorf("refusal %q does not name the call", err)
	}
}
