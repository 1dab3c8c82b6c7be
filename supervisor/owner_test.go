package supervisor

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// fakePipe is a supervisor that records lines and exits when told.
type fakePipe struct {
	pid    int
	mu     sync.Mutex
	lines  []string
	closed bool
	exited chan struct{}
	once   sync.Once
}

func (p *fakePipe) Send(lines [][]byte, reply func(int, error)) {
	p.mu.Lock()
	var err error
	select {
	case <-p.exited:
		err = &lostError{"fake supervisor exited"}
	default:
		for _, l := range lines {
			p.lines = append(p.lines, strings.TrimSuffix(string(l), "\n"))
		}
	}
	p.mu.Unlock()
	if reply != nil {
		for i := range lines {
			reply(i, err)
		}
	}
}
func (p *fakePipe) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.exit()
}
func (p *fakePipe) Waiting() time.Time { return time.Time{} }
func (p *fakePipe) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}
func (p *fakePipe) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}
func (p *fakePipe) exit()                   { p.once.Do(func() { close(p.exited) }) }
func (p *fakePipe) Exited() <-chan struct{} { return p.exited }
func (p *fakePipe) PID() int                { return p.pid }

type fakeLauncher struct {
	mu    sync.Mutex
	pipes []*fakePipe
}

func (l *fakeLauncher) launch(_ time.Duration, _ int, _, _, _ string, replay [][]byte, reply func(int, error)) (deathPipe, error) {
	l.mu.Lock()
	p := &fakePipe{pid: 100000 + len(l.pipes), exited: make(chan struct{})}
	l.pipes = append(l.pipes, p)
	l.mu.Unlock()
	if len(replay) > 0 {
		p.Send(replay, reply)
	}
	return p, nil
}

func (l *fakeLauncher) started() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pipes)
}

func (l *fakeLauncher) last() *fakePipe {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pipes[len(l.pipes)-1]
}

// externalGroup starts a process in its own group, outside any owner.
func externalGroup(t *testing.T) Group {
	t.Helper()
	g, _ := sleepGroup(t, "ext")
	return g
}

func TestIdleClose(t *testing.T) {
	g := externalGroup(t)
	synctest.Test(t, func(t *testing.T) {
		l := &fakeLauncher{}
		o, err := newOwner(Options{Mode: ModePGroup, IdleClose: 30 * time.Second}, l.launch, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if got := l.started(); got != 0 {
			t.Fatalf("supervisors started before any registration: got %d, want 0", got)
		}
		if err := o.Own(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		p := l.last()
		if got := p.got(); len(got) != 1 || !strings.HasPrefix(got[0], "R a") {
			t.Fatalf("lines after Own: got %q, want one registration", got)
		}
		time.Sleep(time.Minute) // registered: never idle-closed
		synctest.Wait()
		if p.isClosed() {
			t.Fatal("pipe closed while a group is registered")
		}
		if err := o.Release(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if p.isClosed() {
			t.Fatal("pipe closed before IdleClose passed")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !p.isClosed() {
			t.Fatal("pipe still open 31 s after the last group left")
		}
		if st := o.Status(); st.PID != 0 || st.Health != "idle" {
			t.Errorf("status after idle close: got %+v, want no supervisor, idle", st)
		}
		// The next registration starts a new supervisor lazily.
		if err := o.Own(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		if got := l.started(); got != 2 {
			t.Errorf("supervisors after a new registration: got %d, want 2", got)
		}
	})
}

func TestRestartReplaysAndBacksOff(t *testing.T) {
	g := externalGroup(t)
	synctest.Test(t, func(t *testing.T) {
		l := &fakeLauncher{}
		var logMu sync.Mutex
		var logs []string
		o, err := newOwner(Options{Mode: ModePGroup, Logf: func(f string, a ...any) {
			logMu.Lock()
			logs = append(logs, f)
			logMu.Unlock()
		}}, l.launch, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if err := o.Own(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		// Killed after living long enough: restarted at once, with the replay.
		time.Sleep(10 * time.Second)
		l.last().exit()
		synctest.Wait()
		if got := l.started(); got != 2 {
			t.Fatalf("supervisors after a kill: got %d, want 2", got)
		}
		if got := l.last().got(); len(got) != 1 || !strings.HasPrefix(got[0], "R a") {
			t.Errorf("replay: got %q, want the registration", got)
		}
		// Exits within 5 s of its start: reported, retried with backoff.
		time.Sleep(time.Second)
		l.last().exit()
		synctest.Wait()
		if got := l.started(); got != 2 {
			t.Fatalf("restarted at once after a quick exit: got %d supervisors, want 2", got)
		}
		if h := o.Status().Health; !strings.HasPrefix(h, "failing") {
			t.Errorf("health after a quick exit: got %q, want failing…", h)
		}
		time.Sleep(1100 * time.Millisecond) // first backoff: 1 s
		synctest.Wait()
		if got := l.started(); got != 3 {
			t.Fatalf("supervisors after the first backoff: got %d, want 3", got)
		}
		l.last().exit() // second quick exit: backoff 2 s
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if got := l.started(); got != 3 {
			t.Errorf("supervisors 1.5 s into the second backoff: got %d, want 3", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := l.started(); got != 4 {
			t.Errorf("supervisors after the second backoff: got %d, want 4", got)
		}
		time.Sleep(6 * time.Second) // lives past quickExit: healthy again
		synctest.Wait()
		if h := o.Status().Health; h != "ok" {
			t.Errorf("health after a supervisor lived 6 s: got %q, want ok", h)
		}
		logMu.Lock()
		n := len(logs)
		logMu.Unlock()
		if n == 0 {
			t.Error("quick exits were not logged")
		}
	})
}

func TestOwnRefusesUnsafeGroups(t *testing.T) {
	l := &fakeLauncher{}
	o, err := newOwner(Options{Mode: ModePGroup}, l.launch, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	self, _ := proc.Self()
	for _, tc := range []struct {
		name string
		g    Group
	}{
		{"pgid 1", Group{PGID: 1}},
		{"pgid 0", Group{PGID: 0}},
		{"owner's group", Group{PGID: syscall.Getpgrp()}},
		{"owner itself", Group{PGID: self.PID, Leader: self}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := o.Own(t.Context(), tc.g); !errors.Is(err, ErrUnsafe) {
				t.Errorf("Own(%+v): got %v, want ErrUnsafe", tc.g, err)
			}
		})
	}
	if got := l.started(); got != 0 {
		t.Errorf("supervisors started by refused groups: got %d, want 0", got)
	}
}

// TestJanitorIdle checks that the janitor wakes only for work: an idle
// owner, with or without registered groups, arms no timer (an hour of the
// bubble's clock costs it no wake-up), and a group waiting to become empty
// is polled only until it is dropped.
func TestJanitorIdle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, o *Owner, g Group)
	}{
		{"nothing registered", func(*testing.T, *Owner, Group) {}},
		{"groups registered", func(t *testing.T, o *Owner, g Group) {
			if err := o.Own(t.Context(), g); err != nil {
				t.Fatal(err)
			}
		}},
		{"idle closed", func(t *testing.T, o *Owner, g Group) {
			if err := o.Own(t.Context(), g); err != nil {
				t.Fatal(err)
			}
			if err := o.Release(t.Context(), g); err != nil {
				t.Fatal(err)
			}
			time.Sleep(31 * time.Second) // the idle close
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := externalGroup(t)
			synctest.Test(t, func(t *testing.T) {
				h := &ownerHooks{}
				o, err := newOwner(Options{Mode: ModePGroup, IdleClose: 30 * time.Second}, (&fakeLauncher{}).launch, h)
				if err != nil {
					t.Fatal(err)
				}
				defer o.Close()
				tc.setup(t, o, g)
				synctest.Wait()
				before := h.passes.Load()
				time.Sleep(time.Hour)
				synctest.Wait()
				if got := h.passes.Load() - before; got != 0 {
					t.Errorf("janitor wake-ups in an idle hour: got %d, want 0", got)
				}
			})
		})
	}
	t.Run("pending until empty", func(t *testing.T) {
		g, cmd := sleepGroup(t, "ext")
		synctest.Test(t, func(t *testing.T) {
			h := &ownerHooks{}
			o, err := newOwner(Options{Mode: ModePGroup}, (&fakeLauncher{}).launch, h)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if err := o.Own(t.Context(), g); err != nil {
				t.Fatal(err)
			}
			if err := o.ReleaseOnceEmpty(t.Context(), g); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			if got := h.passes.Load(); got < 4 {
				t.Errorf("janitor wake-ups in a second with a group waiting to be empty: got %d, want ≥ 4 (it polls)", got)
			}
			if got := o.Status().Groups; got != 1 {
				t.Fatalf("groups before the group is empty: got %d, want 1", got)
			}
			cmd.Process.Kill()
			cmd.Wait()
			time.Sleep(poll)
			synctest.Wait()
			if got := o.Status().Groups; got != 0 {
				t.Fatalf("groups a poll after the group emptied: got %d, want 0", got)
			}
			time.Sleep(time.Second) // the idle close is due 30 s later, not in this window
			synctest.Wait()
			before := h.passes.Load()
			time.Sleep(10 * time.Second)
			synctest.Wait()
			if got := h.passes.Load() - before; got != 0 {
				t.Errorf("janitor wake-ups after the group was dropped: got %d, want 0", got)
			}
		})
	})
}
