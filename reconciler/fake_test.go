package reconciler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// fakeProc is a process that exists only in the fake spawner.
type fakeProc struct {
	g    supervisor.Group
	done chan struct{}
	once sync.Once
	err  error
}

func (p *fakeProc) Group() supervisor.Group { return p.g }
func (p *fakeProc) Done() <-chan struct{}   { return p.done }
func (p *fakeProc) Err() error              { return p.err }
func (p *fakeProc) exit(err error)          { p.once.Do(func() { p.err = err; close(p.done) }) }

type spawnRec struct {
	at   time.Time
	spec supervisor.Spec
	proc *fakeProc
}

type stopRec struct {
	unit string
	sig  syscall.Signal
}

// fakeSpawner records spawns and stops; Stop makes the process exit at once.
// Pids start above any real pid_max so that Notify's /proc lookups find
// nothing of ours.
type fakeSpawner struct {
	mu     sync.Mutex
	spawns []spawnRec
	stops  []stopRec
	sent   []sentRec        // Signal and SignalProcess (signal_test.go)
	fail   map[string]error // unit -> spawn error
}

func (f *fakeSpawner) Spawn(_ context.Context, s supervisor.Spec) (Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[s.Unit]; err != nil {
		return nil, err
	}
	pid := 5_000_000 + len(f.spawns)
	p := &fakeProc{g: supervisor.Group{Unit: s.Unit, PGID: pid, Leader: proc.Identity{PID: pid, StartTime: 1}}, done: make(chan struct{})}
	f.spawns = append(f.spawns, spawnRec{time.Now(), s, p})
	return p, nil
}

func (f *fakeSpawner) Stop(_ context.Context, g supervisor.Group, sig syscall.Signal, _ time.Duration) error {
	f.mu.Lock()
	f.stops = append(f.stops, stopRec{g.Unit, sig})
	f.mu.Unlock()
	f.stopQuietly(g)
	return nil
}

// stopQuietly makes g's process exit, as Stop does, without recording a
// stop of its own.
func (f *fakeSpawner) stopQuietly(g supervisor.Group) {
	f.mu.Lock()
	var p *fakeProc
	for i := len(f.spawns) - 1; i >= 0; i-- { // the latest first: the one stopped is most often recent
		if f.spawns[i].proc.g.PGID == g.PGID {
			p = f.spawns[i].proc
			break
		}
	}
	f.mu.Unlock()
	if p != nil {
		p.exit(errTerminated)
	}
}

func (f *fakeSpawner) WatchExit(context.Context, supervisor.Group) (<-chan struct{}, error) {
	return make(chan struct{}), nil
}

// last returns the latest process spawned for unit.
func (f *fakeSpawner) last(t *testing.T, unit string) *fakeProc {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.spawns) - 1; i >= 0; i-- {
		if f.spawns[i].spec.Unit == unit {
			return f.spawns[i].proc
		}
	}
	t.Fatalf("unit %s was never spawned", unit)
	return nil
}

// lastArgv is the argv of the last spawn of any unit.
func (f *fakeSpawner) lastArgv(t *testing.T) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.spawns) == 0 {
		t.Fatal("nothing was spawned")
	}
	return f.spawns[len(f.spawns)-1].spec.Argv
}

func (f *fakeSpawner) spawnTimes(unit string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, s := range f.spawns {
		if s.spec.Unit == unit {
			out = append(out, s.at)
		}
	}
	return out
}

func (f *fakeSpawner) stopOrder() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.stops {
		out = append(out, s.unit)
	}
	return out
}

// harness runs a Reconciler over a fake spawner and a mutable unit list.
type harness struct {
	t     *testing.T
	fs    *fakeSpawner
	r     *Reconciler
	mu    sync.Mutex
	specs []units.Spec   // guarded by mu
	errs  []*units.Error // guarded by mu
	stop  func() error   // ends r's Run: see runInTest
}

// newHarness returns a harness over a fresh fake spawner and specs; run
// starts it.
func newHarness(t *testing.T, specs ...units.Spec) *harness {
	return &harness{t: t, fs: &fakeSpawner{fail: map[string]error{}}, specs: specs}
}

// load is Options.Load over h's unit list: a copy of it as it is now.
func (h *harness) load(context.Context) (Loaded, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Loaded{Specs: copies(h.specs), Errors: slices.Clone(h.errs)}, nil
}

// copies are specs as a load that reads every file anew gives them: a
// copy of each.
func copies(specs []units.Spec) []*units.Spec {
	out := make([]*units.Spec, len(specs))
	for i, s := range specs {
		out[i] = &s
	}
	return out
}

// run makes r, New's result, h's reconciler and runs it until h.shutdown
// or the test's end; New's error fails the test.
func (h *harness) run(r *Reconciler, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
	h.r = r
	h.stop = runInTest(h.t, r)
}

// runInTest runs r on a goroutine of its own until the returned stop is
// called or the test ends (its cleanup calls stop); stop cancels Run's
// context, waits for Run to return and returns its error, the same at
// every call.
func runInTest(t *testing.T, r *Reconciler) (stop func() error) { return testkit.Run(t, r.Run) }

func spec(name string, mod ...func(*units.Spec)) units.Spec {
	s := units.Spec{Name: name, Command: []string{"/bin/true"}, Ownership: units.Owned, Restart: units.RestartNo,
		RestartSec: time.Second, RestartMax: 30 * time.Second, Timeouts: units.Timeouts{Stop: time.Second}}
	for _, m := range mod {
		m(&s)
	}
	return s
}

// heldUntil runs f on a goroutine, checks once the bubble is idle that
// it has not returned (else fails t, saying early), closes release, and
// fails t if f then returns an error. In a synctest bubble only.
func heldUntil(t *testing.T, release chan struct{}, early string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	synctest.Wait()
	if err, ok := testkit.Ready(done); ok {
		t.Fatalf("%s (it returned %v)", early, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// restarting is svc restarting by policy, its backoff doubling from 1s up
// to most, with a start limit of burst starts a minute when burst is above
// 0.
func restarting(policy units.Restart, most time.Duration, burst int) units.Spec {
	return spec("svc", func(s *units.Spec) {
		s.Restart, s.RestartMax = policy, most
		if burst > 0 {
			s.StartLimit = units.StartLimit{Burst: burst, Interval: time.Minute}
		}
	})
}

// fakeOptions are what every test's Reconciler over the spawner sp and
// the units load returns sets: a fresh state directory, PATH=/bin and a
// fixed jitter. A test sets more before New.
func fakeOptions(t *testing.T, sp Spawner, load func(context.Context) (Loaded, error)) Options {
	return Options{Spawner: sp, StateDir: t.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 }, Load: load}
}

// mustNew is New(o), failing t at once when it fails.
func mustNew(t *testing.T, o Options) *Reconciler {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// options are what every run on h sets: role and fakeOptions over h's
// fake spawner and loader. A test sets more before New.
func (h *harness) options(role units.Role) Options {
	o := fakeOptions(h.t, h.fs, h.load)
	o.Role = role
	return o
}

// start builds and runs the harness; call it inside a synctest bubble.
func start(t *testing.T, role units.Role, specs ...units.Spec) *harness {
	t.Helper()
	h := newHarness(t, specs...)
	o := h.options(role)
	o.Env = append(o.Env, "NOTIFY_SOCKET=/run/systemd/notify")
	o.NotifySocket = "/tmp/hermes-test-notify"
	h.run(New(o))
	return h
}

// fail makes the last run of unit exit 1, then lets wait pass (a
// restart's backoff); call it inside the synctest bubble.
func (h *harness) fail(unit string, wait time.Duration) {
	h.t.Helper()
	h.fs.last(h.t, unit).exit(errExit1)
	synctest.Wait()
	time.Sleep(wait)
	synctest.Wait()
}

// shutdown ends h's Run and returns its error.
func (h *harness) shutdown() error { return h.stop() }

func (h *harness) unit(name string) control.Unit {
	h.t.Helper()
	st, err := h.r.Status(context.Background(), name)
	if err != nil {
		h.t.Fatalf("status %s: %v", name, err)
	}
	return st.Units[0]
}

var errTerminated = errors.New("signal: terminated")
