package reconciler

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// fakeRuns records what the reconciler tells the proxy.
type fakeRuns struct {
	mu           sync.Mutex
	registered   map[string]string // run id -> wrap-up notice
	budgets      map[string]*timeouts.Budget
	unregistered []string
	// fs, when set, is the spawner whose stops unregistering counts:
	// stopsBefore holds, for each UnregisterRun, how many stops were made
	// before it.
	fs          *fakeSpawner
	stopsBefore []int
}

func (f *fakeRuns) RegisterRun(id string, b *timeouts.Budget, wrapup string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registered[id], f.budgets[id] = wrapup, b
}

func (f *fakeRuns) UnregisterRun(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unregistered = append(f.unregistered, id)
	if f.fs != nil {
		f.stopsBefore = append(f.stopsBefore, len(f.fs.stopOrder()))
	}
}

// sigSpawner is the fake spawner whose processes record the signals sent
// to their leader (wrapup_signal).
type sigSpawner struct {
	*fakeSpawner
	mu   sync.Mutex
	sigs []syscall.Signal
}

type sigProc struct {
	*fakeProc
	s *sigSpawner
}

func (p sigProc) Signal(sig syscall.Signal) error {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	p.s.sigs = append(p.s.sigs, sig)
	return nil
}

func (s *sigSpawner) Spawn(ctx context.Context, sp supervisor.Spec) (Process, error) {
	p, err := s.fakeSpawner.Spawn(ctx, sp)
	if err != nil {
		return nil, err
	}
	return sigProc{p.(*fakeProc), s}, nil
}

func (s *sigSpawner) signals() []syscall.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sigs)
}

// jobHarness is a harness whose reconciler has a proxy (fakeRuns) and a
// spawner that records signals.
type jobHarness struct {
	*harness
	runs  *fakeRuns
	ss    *sigSpawner
	token atomic.Pointer[string] // the proxy token ProxyToken returns
}

const (
	testProxyURL   = "http://127.0.0.1:7411"
	testProxyToken = "hermes-TESTTOKEN"
)

// TestProxyEnv: jobs and units with proxy_env: true get OPENAI_BASE_URL
// and OPENAI_API_KEY (the proxy token as read at their spawn), other
// units neither, and a unit's own values win.
func TestProxyEnv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startJobs(t,
			jobSpec("job", "0 0 1 1 *"),
			spec("svc", func(s *units.Spec) { s.ProxyEnv = true }),
			spec("plain"),
			spec("own", func(s *units.Spec) {
				s.ProxyEnv = true
				s.Env = map[string]string{EnvOpenAIKey: "sk-own", EnvOpenAIBase: "http://elsewhere/v1"}
			}),
		)
		synctest.Wait()
		if err := h.r.Start(t.Context(), "job"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		tests := []struct {
			unit, base, key string
		}{
			{"job", testProxyURL + "/v1", testProxyToken},
			{"svc", testProxyURL + "/v1", testProxyToken},
			{"plain", "", ""},
			{"own", "http://elsewhere/v1", "sk-own"},
		}
		for _, tt := range tests {
			env := h.lastEnv(tt.unit)
			base, _ := envOf(env, EnvOpenAIBase)
			key, _ := envOf(env, EnvOpenAIKey)
			if base != tt.base || key != tt.key {
				t.Errorf("%s: %s=%q %s=%q, want %q and %q", tt.unit, EnvOpenAIBase, base, EnvOpenAIKey, key, tt.base, tt.key)
			}
		}
		next := "hermes-ROTATED"
		h.token.Store(&next)
		if err := h.r.Restart(t.Context(), "svc"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if key, _ := envOf(h.lastEnv("svc"), EnvOpenAIKey); key != next {
			t.Errorf("svc restarted after a rotation: %s=%q, want the new token", EnvOpenAIKey, key)
		}
	})
}

// startJobs is start with a run registry and ProxyURL; call it inside a
// synctest bubble.
func startJobs(t *testing.T, specs ...units.Spec) *jobHarness {
	t.Helper()
	h := newHarness(t, specs...)
	jh := &jobHarness{harness: h, runs: &fakeRuns{registered: map[string]string{}, budgets: map[string]*timeouts.Budget{}}, ss: &sigSpawner{fakeSpawner: h.fs}}
	tok := testProxyToken
	jh.token.Store(&tok)
	h.run(New(Options{
		Role:       units.RoleGateway,
		Spawner:    jh.ss,
		StateDir:   t.TempDir(),
		Env:        []string{"PATH=/bin"},
		Rand:       func() float64 { return 0.5 },
		Load:       h.load,
		Runs:       jh.runs,
		ProxyURL:   testProxyURL,
		ProxyToken: func() string { return *jh.token.Load() },
	}))
	return jh
}

func jobSpec(name, schedule string, mod ...func(*units.Spec)) units.Spec {
	return spec(name, append([]func(*units.Spec){func(s *units.Spec) {
		s.Schedule = schedule
		s.Restart = units.RestartOnFailure
	}}, mod...)...)
}

func envOf(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func (h *harness) lastEnv(unit string) []string {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	for i := len(h.fs.spawns) - 1; i >= 0; i-- {
		if h.fs.spawns[i].spec.Unit == unit {
			return h.fs.spawns[i].spec.Env
		}
	}
	h.t.Fatalf("unit %s was never spawned", unit)
	return nil
}

// TestJobFiresOnSchedule: an every-minute job is not started at load, fires
// exactly at each minute boundary, and a run that exits 0 is not restarted.
func TestJobFiresOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		first := t0.Truncate(time.Minute).Add(time.Minute)
		h := startJobs(t, jobSpec("tick", "* * * * *"))
		synctest.Wait()
		if u := h.unit("tick"); u.Job == nil || !u.Job.Next.Equal(first) {
			t.Fatalf("job status %+v, want next %v", u.Job, first)
		}
		time.Sleep(first.Sub(t0) - time.Millisecond)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("tick")); n != 0 {
			t.Fatalf("spawned %d times before the first minute boundary, want 0", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		h.fs.last(t, "tick").exit(nil)
		synctest.Wait()
		u := h.unit("tick")
		if u.State != "exited" || u.Job.Result != ResultSuccess || u.Restarts != 0 {
			t.Errorf("after exit 0: state %s result %q restarts %d, want exited success 0", u.State, u.Job.Result, u.Restarts)
		}
		time.Sleep(90 * time.Second) // past the next boundary, not the one after
		synctest.Wait()
		want := []time.Time{first, first.Add(time.Minute)}
		if got := h.fs.spawnTimes("tick"); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("spawned at %v, want %v", got, want)
		}
		if u := h.unit("tick"); !u.Job.Next.Equal(first.Add(2 * time.Minute)) {
			t.Errorf("next fire %v, want %v", u.Job.Next, first.Add(2*time.Minute))
		}
	})
}

// TestJobNoOverlap: a fire while the previous run still runs is skipped.
func TestJobNoOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := time.Now().Truncate(time.Minute).Add(time.Minute)
		h := startJobs(t, jobSpec("slow", "* * * * *"))
		time.Sleep(time.Until(first) + 2*time.Minute + time.Second) // fires at first, +1m (skipped), +2m (skipped)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("slow")); n != 1 {
			t.Fatalf("spawned %d times while the first run ran, want 1", n)
		}
		if u := h.unit("slow"); u.Job.Skipped != 2 || u.Job.Result != ResultRunning {
			t.Errorf("skipped %d result %q, want 2 running", u.Job.Skipped, u.Job.Result)
		}
		h.fs.last(t, "slow").exit(nil)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(h.fs.spawnTimes("slow")); n != 2 {
			t.Errorf("spawned %d times after the first run ended and a fire came, want 2", n)
		}
	})
}

// TestJobFailure: a failed run is restarted per its policy only.
func TestJobFailure(t *testing.T) {
	tests := []struct {
		policy       units.Restart
		wantSpawns   int
		wantState    control.UnitState
		wantRestarts int
	}{
		{units.RestartOnFailure, 2, "running", 1},
		{units.RestartNo, 1, "failed", 0},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startJobs(t, jobSpec("flaky", "0 0 1 1 *", func(s *units.Spec) { s.Restart = tt.policy }))
				synctest.Wait()
				if err := h.r.Start(t.Context(), "flaky"); err != nil {
					t.Fatal(err)
				}
				h.fs.last(t, "flaky").exit(errExit1)
				synctest.Wait()
				if u := h.unit("flaky"); u.Job.Result != ResultFailed {
					t.Errorf("result %q after exit 1, want failed", u.Job.Result)
				}
				time.Sleep(5 * time.Second) // past the 1s backoff
				synctest.Wait()
				u := h.unit("flaky")
				if n := len(h.fs.spawnTimes("flaky")); n != tt.wantSpawns || u.State != tt.wantState || u.Restarts != tt.wantRestarts {
					t.Errorf("spawns %d state %s restarts %d, want %d %s %d", n, u.State, u.Restarts, tt.wantSpawns, tt.wantState, tt.wantRestarts)
				}
			})
		})
	}
}

// TestJobBudget: a run with a 100 s budget gets its environment, one
// wrap-up notice at 80 s (file, signal, proxy registration), and is stopped
// at 100 s, marked budget exceeded and not restarted.
func TestJobBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startJobs(t, jobSpec("agent", "0 0 1 1 *", func(s *units.Spec) {
			s.RunBudget = 100 * time.Second
			s.WrapupSig = units.Signal(syscall.SIGUSR1)
			s.StopSignal = units.Signal(syscall.SIGINT)
		}))
		synctest.Wait()
		h.runs.mu.Lock()
		h.runs.fs = h.fs
		h.runs.mu.Unlock()
		t0 := time.Now()
		if err := h.r.Start(t.Context(), "agent"); err != nil {
			t.Fatal(err)
		}
		env := h.lastEnv("agent")
		id, _ := envOf(env, EnvRunID)
		deadline, _ := envOf(env, EnvRunDeadline)
		wrapFile, _ := envOf(env, EnvWrapupFile)
		base, _ := envOf(env, EnvOpenAIBase)
		if !strings.HasPrefix(id, "agent-") {
			t.Errorf("%s=%q, want agent-…", EnvRunID, id)
		}
		if want := t0.Add(100 * time.Second).Format(time.RFC3339); deadline != want {
			t.Errorf("%s=%q, want %q", EnvRunDeadline, deadline, want)
		}
		if want := testProxyURL + "/run/" + id + "/v1"; base != want {
			t.Errorf("%s=%q, want %q", EnvOpenAIBase, base, want)
		}
		h.runs.mu.Lock()
		notice, registered := h.runs.registered[id]
		h.runs.mu.Unlock()
		if !registered || !strings.Contains(notice, "Wrap up now") || !strings.Contains(notice, "20s remain") {
			t.Errorf("proxy registration of %s: %v %q, want a wrap-up notice saying 20s remain", id, registered, notice)
		}

		time.Sleep(80*time.Second - time.Millisecond)
		synctest.Wait()
		if _, err := os.Stat(wrapFile); !os.IsNotExist(err) {
			t.Errorf("notice file before 80%%: %v, want none", err)
		}
		if s := h.ss.signals(); len(s) != 0 {
			t.Errorf("signals before 80%%: %v, want none", s)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		b, err := os.ReadFile(wrapFile)
		if err != nil || !strings.Contains(string(b), "20s remain") {
			t.Errorf("notice file at 80%%: %q %v, want the wrap-up notice", b, err)
		}
		time.Sleep(20*time.Second - time.Millisecond)
		synctest.Wait()
		if s := h.ss.signals(); !slices.Equal(s, []syscall.Signal{syscall.SIGUSR1}) {
			t.Errorf("signals up to the deadline: %v, want one SIGUSR1", s)
		}
		if u := h.unit("agent"); u.State != "running" || len(h.fs.stopOrder()) != 0 {
			t.Fatalf("just before the deadline: state %s, stops %v; want running, none", u.State, h.fs.stopOrder())
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		h.fs.mu.Lock()
		stops := slices.Clone(h.fs.stops)
		h.fs.mu.Unlock()
		if len(stops) != 1 || stops[0].sig != syscall.SIGINT {
			t.Errorf("stops at the deadline %v, want one with the stop signal SIGINT", stops)
		}
		time.Sleep(time.Minute) // no restart after the backoff
		synctest.Wait()
		u := h.unit("agent")
		if u.State != "failed" || u.Job.Result != ResultBudgetExceeded || !strings.Contains(u.Error, "budget exceeded") {
			t.Errorf("state %s result %q error %q, want failed, budget exceeded", u.State, u.Job.Result, u.Error)
		}
		if n := len(h.fs.spawnTimes("agent")); n != 1 {
			t.Errorf("spawned %d times, want 1: a run stopped at its budget is not restarted", n)
		}
		if u.Job.Runs[ResultBudgetExceeded] != 1 || u.Job.Budget != 100*time.Second || u.Job.Duration < 100*time.Second {
			t.Errorf("runs %v budget %s duration %s, want budget exceeded 1, 1m40s, at least 1m40s", u.Job.Runs, u.Job.Budget, u.Job.Duration)
		}
		if _, err := os.Stat(wrapFile); !os.IsNotExist(err) {
			t.Errorf("notice file after the run: %v, want removed", err)
		}
		h.runs.mu.Lock()
		unreg := slices.Clone(h.runs.unregistered)
		h.runs.mu.Unlock()
		if !slices.Equal(unreg, []string{id}) {
			t.Errorf("unregistered %v, want [%s]", unreg, id)
		}
		h.runs.mu.Lock()
		before := slices.Clone(h.runs.stopsBefore)
		h.runs.mu.Unlock()
		if !slices.Equal(before, []int{0}) {
			t.Errorf("stops made before the run was unregistered from the proxy: %v, want [0]: its calls end before the stop signal", before)
		}
	})
}

// TestJobReloadRearms: a reload that changes a schedule re-arms the timer
// at once; one that removes it stops the firing.
func TestJobReloadRearms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now().Truncate(time.Hour)
		h := startJobs(t, jobSpec("report", "0 * * * *")) // hourly
		synctest.Wait()
		h.mu.Lock()
		h.specs = []units.Spec{jobSpec("report", "*/5 * * * *")}
		h.mu.Unlock()
		if _, err := h.r.Reload(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		if u := h.unit("report"); !u.Job.Next.Equal(t0.Add(5 * time.Minute)) {
			t.Errorf("next after reload %v, want %v", u.Job.Next, t0.Add(5*time.Minute))
		}
		time.Sleep(time.Until(t0.Add(5*time.Minute)) + time.Second)
		synctest.Wait()
		if got := h.fs.spawnTimes("report"); len(got) != 1 || !got[0].Equal(t0.Add(5*time.Minute)) {
			t.Fatalf("spawned at %v, want once at %v", got, t0.Add(5*time.Minute))
		}
		h.fs.last(t, "report").exit(nil)
		h.mu.Lock()
		h.specs = []units.Spec{spec("report")} // no schedule: a plain service now
		h.specs[0].Restart = units.RestartNo
		h.mu.Unlock()
		if _, err := h.r.Reload(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		n := len(h.fs.spawnTimes("report"))
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if got := len(h.fs.spawnTimes("report")); got != n {
			t.Errorf("spawned %d more times after the schedule was removed, want 0", got-n)
		}
		if u := h.unit("report"); u.Job != nil {
			t.Errorf("job status %+v for a unit without schedule, want none", u.Job)
		}
	})
}

// TestJobEnvWithoutProxy: a job without a budget, under a reconciler with
// no proxy, gets a run id and nothing else of the run.
func TestJobEnvWithoutProxy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway, jobSpec("plain", "0 0 1 1 *"))
		synctest.Wait()
		if err := h.r.Start(t.Context(), "plain"); err != nil {
			t.Fatal(err)
		}
		env := h.lastEnv("plain")
		if id, ok := envOf(env, EnvRunID); !ok || !strings.HasPrefix(id, "plain-") {
			t.Errorf("%s=%q, want plain-…", EnvRunID, id)
		}
		for _, k := range []string{EnvRunDeadline, EnvWrapupFile, EnvOpenAIBase} {
			if v, ok := envOf(env, k); ok {
				t.Errorf("%s=%q, want unset", k, v)
			}
		}
		var st control.Status
		st, err := h.r.Status(t.Context(), "plain")
		if err != nil {
			t.Fatal(err)
		}
		if st.Proxy != nil {
			t.Errorf("status proxy %+v with the proxy off, want none", st.Proxy)
		}
	})
}

func TestWrapUpNotice(t *testing.T) {
	d := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	got := WrapUpNotice("nightly", "nightly-1", 850*time.Second, 170*time.Second, d)
	for _, want := range []string{"nightly", "nightly-1", "14m10s", "2m50s remain", "2030-01-02T03:04:05Z", "Wrap up now", `"budget exceeded"`} {
		if !strings.Contains(got, want) {
			t.Errorf("notice %q lacks %q", got, want)
		}
	}
}

// TestJobRunsCounted: status counts a job's ended runs by result, and
// gives the latest run's duration and budget; each run's leader's exit
// status is the unit's (128+N for a signal), the previous one's while a
// new run has not ended.
func TestJobRunsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startJobs(t, jobSpec("batch", "0 0 1 1 *", func(s *units.Spec) {
			s.RunBudget = 100 * time.Second
			s.Restart = units.RestartNo
		}))
		synctest.Wait()
		if u := h.unit("batch"); u.Job.Runs != nil || u.ExitStatus != nil || u.Job.Duration != 0 {
			t.Fatalf("before any run: runs %v exit %v duration %s, want none", u.Job.Runs, u.ExitStatus, u.Job.Duration)
		}
		run := func(d time.Duration, err error) control.Unit {
			t.Helper()
			if err := h.r.Start(t.Context(), "batch"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(d)
			synctest.Wait()
			h.fs.last(t, "batch").exit(err)
			synctest.Wait()
			return h.unit("batch")
		}
		u := run(30*time.Second, nil)
		if !maps.Equal(u.Job.Runs, map[control.JobResult]int{ResultSuccess: 1}) || u.Job.Duration != 30*time.Second || u.Job.Budget != 100*time.Second {
			t.Errorf("after a 30 s success: runs %v duration %s budget %s, want success 1, 30s, 1m40s", u.Job.Runs, u.Job.Duration, u.Job.Budget)
		}
		if u.ExitStatus == nil || *u.ExitStatus != 0 {
			t.Errorf("after exit 0: exit status %v, want 0", u.ExitStatus)
		}
		u = run(10*time.Second, &supervisor.ExitError{Code: 3})
		if !maps.Equal(u.Job.Runs, map[control.JobResult]int{ResultSuccess: 1, ResultFailed: 1}) || u.Job.Duration != 10*time.Second {
			t.Errorf("after a failed run: runs %v duration %s, want success 1 failed 1, 10s", u.Job.Runs, u.Job.Duration)
		}
		if u.ExitStatus == nil || *u.ExitStatus != 3 {
			t.Errorf("after exit 3: exit status %v, want 3", u.ExitStatus)
		}
		if err := h.r.Start(t.Context(), "batch"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if u := h.unit("batch"); u.Job.Duration != 5*time.Second || u.ExitStatus == nil || *u.ExitStatus != 3 {
			t.Errorf("running for 5 s: duration %s exit status %v, want 5s and the last run's 3", u.Job.Duration, u.ExitStatus)
		}
		h.fs.last(t, "batch").exit(&supervisor.ExitError{Code: -1, Signal: syscall.SIGKILL})
		synctest.Wait()
		if u := h.unit("batch"); u.ExitStatus == nil || *u.ExitStatus != 128+9 || u.Job.Runs[ResultFailed] != 2 {
			t.Errorf("killed by KILL: exit status %v runs %v, want 137 and failed 2", u.ExitStatus, u.Job.Runs)
		}
		if err := h.r.Start(t.Context(), "batch"); err != nil {
			t.Fatal(err)
		}
		if err := h.r.Stop(t.Context(), "batch"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if u := h.unit("batch"); u.Job.Runs[ResultStopped] != 1 {
			t.Errorf("after a stop by command: runs %v, want stopped 1", u.Job.Runs)
		}
	})
}

// TestOneshotJobSucceeds: a oneshot job whose run exits 0 is done, and
// its result is success (it read stopped), counted as one.
func TestOneshotJobSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startJobs(t, jobSpec("once", "0 0 1 1 *", func(s *units.Spec) {
			s.Type = units.Oneshot
			s.Restart = units.RestartNo
		}))
		synctest.Wait()
		if err := h.r.Start(t.Context(), "once"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h.fs.last(t, "once").exit(nil)
		synctest.Wait()
		u := h.unit("once")
		if u.Job == nil || u.Job.Result != ResultSuccess || !maps.Equal(u.Job.Runs, map[control.JobResult]int{ResultSuccess: 1}) {
			t.Errorf("a oneshot job after exit 0: state %s, job %+v; want result success, runs success 1", u.State, u.Job)
		}
	})
}
