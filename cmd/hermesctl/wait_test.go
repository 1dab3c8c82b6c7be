package main

import (
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
)

// TestJudge: where a unit's status leaves a wait for its start.
func TestJudge(t *testing.T) {
	tm := &control.Timeouts{Start: 2 * time.Second, Stop: time.Second}
	web := func(mod func(*control.Unit)) control.Unit {
		u := control.Unit{Name: "web", State: "starting", PID: 10, PGID: 10, Type: "simple", Probe: "tcp 127.0.0.1:8080", Timeouts: tm}
		mod(&u)
		return u
	}
	job := func(state control.UnitState, run string, result control.JobResult, errText string) control.Unit {
		pgid := 0
		if state == "running" {
			pgid = 20
		}
		return control.Unit{Name: "backup", State: state, PGID: pgid, Type: "simple", Error: errText,
			Job: &control.Job{RunID: run, Result: result}}
	}
	for _, tc := range []struct {
		name      string
		w         watch
		u         control.Unit
		deps      map[string]control.Unit
		doing     string // while not done
		reached   string // done, no error
		wantError string // done with this error
	}{
		{name: "probe passed", u: web(func(u *control.Unit) { u.State, u.Ready = "running", true }), reached: "ready: tcp 127.0.0.1:8080"},
		{name: "no probe: running", u: web(func(u *control.Unit) { u.State, u.Probe = "running", "" }), reached: "running"},
		{name: "probing", u: web(func(*control.Unit) {}), doing: "starting, probe tcp 127.0.0.1:8080"},
		{name: "forking, main process not found yet", u: web(func(u *control.Unit) { u.Type, u.Probe, u.PID = "forking", "", 0 }),
			doing: "starting, until its main process is found"},
		{name: "oneshot running", u: web(func(u *control.Unit) { u.Type, u.Probe = "oneshot", "" }), doing: "running, until it exits"},
		{name: "oneshot done", u: web(func(u *control.Unit) { u.Type, u.State, u.PGID = "oneshot", "done", 0 }), reached: "done"},
		{name: "stopping after a failed probe", u: web(func(u *control.Unit) { u.State = "stopping" }), doing: "stopping"},
		{name: "failed", u: web(func(u *control.Unit) { u.State, u.PGID, u.Error = "failed", 0, "exit status 3" }),
			wantError: "failed: exit status 3; its log: `hermesctl logs web`"},
		{name: "exited before ready", u: web(func(u *control.Unit) { u.State, u.PGID = "exited", 0 }),
			wantError: "exited: exited with status 0 before it was ready (tcp 127.0.0.1:8080); its log: `hermesctl logs web`"},
		{name: "stopped meanwhile", u: web(func(u *control.Unit) { u.State, u.PGID = "stopped", 0 }),
			wantError: "stopped: stopped before it was ready; its log: `hermesctl logs web`"},
		{name: "failed and already restarted", w: watch{restarts: 1},
			u:         web(func(u *control.Unit) { u.Restarts, u.Error = 2, "exit status 1; restarting in 1s" }),
			wantError: "failed: exit status 1; restarting in 1s; its log: `hermesctl logs web`"},
		{name: "waiting", u: web(func(u *control.Unit) {
			u.PID, u.PGID, u.After, u.Error = 0, 0, []string{"db"}, "waiting for db to be ready"
		}),
			deps: map[string]control.Unit{"db": {Name: "db", State: "starting", PGID: 5}}, doing: "waiting for db to be ready"},
		{name: "waiting for a failed unit",
			u: web(func(u *control.Unit) {
				u.PID, u.PGID, u.Requires, u.Error = 0, 0, []string{"db"}, "requires db, which is failed"
			}),
			deps:      map[string]control.Unit{"db": {Name: "db", State: "failed", Error: "exit status 1"}},
			wantError: "not started: waits for db, which is failed: exit status 1; fix db, or start it: `hermesctl start db`"},
		{name: "waiting for a unit that waits for a stopped one",
			u: web(func(u *control.Unit) {
				u.PID, u.PGID, u.After, u.Error = 0, 0, []string{"api"}, "waiting for api to be ready"
			}),
			deps: map[string]control.Unit{
				"api": {Name: "api", State: "starting", Requires: []string{"db"}},
				"db":  {Name: "db", State: "stopped"},
			},
			wantError: "not started: waits for api, which waits for db, which is stopped; fix db, or start it: `hermesctl start db`"},
		{name: "job run running", w: watch{res: control.ActionResult{RunID: "r1"}}, u: job("running", "r1", "running", ""), doing: "run r1 running"},
		{name: "job run succeeded", w: watch{res: control.ActionResult{RunID: "r1"}}, u: job("exited", "r1", "success", ""), reached: "run r1: success"},
		{name: "job run failed", w: watch{res: control.ActionResult{RunID: "r1"}}, u: job("failed", "r1", "failed", "exit status 4"),
			wantError: "failed: exit status 4; its log: `hermesctl logs backup`"},
		{name: "job run failed, another began", w: watch{res: control.ActionResult{RunID: "r1"}}, u: job("running", "r2", "running", "exit status 4; restarting in 1s"),
			wantError: "failed: exit status 4; restarting in 1s; its log: `hermesctl logs backup`"},
		{name: "job: no run begun yet", w: watch{prior: &control.Job{RunID: "r0", Result: "success"}}, u: job("exited", "r0", "success", ""),
			doing: "waiting for its run to begin"},
		{name: "job: the run begun later", w: watch{prior: &control.Job{RunID: "r0"}}, u: job("exited", "r1", "success", ""), reached: "run r1: success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(&tc.w, tc.u, tc.deps)
			switch {
			case tc.wantError != "":
				if !v.done || v.err == nil || v.err.Error() != tc.wantError {
					t.Errorf("got done %v, error %v; want error %q", v.done, v.err, tc.wantError)
				}
			case tc.reached != "":
				if !v.done || v.err != nil || v.reached != tc.reached {
					t.Errorf("got done %v, reached %q, error %v; want reached %q", v.done, v.reached, v.err, tc.reached)
				}
			default:
				if v.done || v.doing != tc.doing {
					t.Errorf("got done %v (error %v), doing %q; want doing %q", v.done, v.err, v.doing, tc.doing)
				}
			}
		})
	}
}

// TestBound: the wait gives up on hermesd only past the unit's own
// timeouts, counted from its spawn, plus the stop and a margin; never
// while the unit waits for others, nor for a step with no runtime_max.
func TestBound(t *testing.T) {
	read := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tm := &control.Timeouts{Start: 2 * time.Second, Stop: time.Second}
	deadline := read.Add(time.Minute)
	for _, tc := range []struct {
		name string
		u    control.Unit
		want time.Time
	}{
		{"start timeout", control.Unit{PGID: 1, Type: "simple", Uptime: 500 * time.Millisecond, Timeouts: tm},
			read.Add(-500*time.Millisecond + 3*time.Second + waitMargin)},
		{"no start timeout", control.Unit{PGID: 1, Type: "simple", Timeouts: &control.Timeouts{Stop: time.Second}}, time.Time{}},
		{"waiting for others", control.Unit{Type: "simple", Timeouts: tm}, time.Time{}},
		{"oneshot without runtime_max", control.Unit{PGID: 1, Type: "oneshot", Timeouts: tm}, time.Time{}},
		{"oneshot with runtime_max", control.Unit{PGID: 1, Type: "oneshot", Timeouts: &control.Timeouts{Stop: time.Second, RuntimeMax: time.Minute}},
			read.Add(time.Minute + time.Second + waitMargin)},
		{"job with a budget", control.Unit{PGID: 1, Type: "simple", Timeouts: tm, Job: &control.Job{Deadline: deadline}},
			deadline.Add(time.Second + waitMargin)},
		{"older daemon", control.Unit{PGID: 1}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := bound(tc.u, read); !got.Equal(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTookDown(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"api"}, " (and api, which requires it)"},
		{[]string{"api", "web"}, " (and api and web, which require it)"},
		{[]string{"api", "web", "cron"}, " (and api, web and cron, which require it)"},
	} {
		if got := tookDown(tc.names); got != tc.want {
			t.Errorf("tookDown(%q): got %q, want %q", tc.names, got, tc.want)
		}
	}
}
