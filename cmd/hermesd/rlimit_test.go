package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/reconciler"
	"github.com/hermes-units/hermes/units"
)

func TestFdWatch(t *testing.T) {
	specs := func(n int) *reconciler.Loaded { return &reconciler.Loaded{Specs: named("u", n)} }
	var buf bytes.Buffer
	w := &fdWatch{soft: 4096, hard: 4096, proxyOn: true, log: slog.New(slog.NewTextHandler(&buf, nil))}
	for _, tc := range []struct {
		name  string
		units int
		warn  bool
	}{
		{"fits", 10, false},            // 64 + 30 + 10 + 90 + 1024
		{"over the limit", 1000, true}, // 64 + 3000 + 1000 + 144 + 1024
		{"the same shortfall again: quiet", 1000, false},
		{"another shortfall", 2000, true},
		{"fits again", 0, false},
		{"short again after fitting", 1000, true},
	} {
		buf.Reset()
		w.check(units.Config{}, specs(tc.units))
		if got := strings.Contains(buf.String(), "descriptor limit 4096"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v: %s", tc.name, got, tc.warn, buf.String())
		}
	}
	buf.Reset()
	w.check(units.Config{Gateway: units.Gateway{MaxConnections: 2000}}, specs(10))
	if !strings.Contains(buf.String(), "the proxy's 2000 connections") {
		t.Errorf("gateway.max_connections 2000 not counted: %s", buf.String())
	}
	if got, want := fdNeed(1000, 10, 512), uint64(fdBase+1000*fdHeld+10*fdNotify+fdLogs(1000)+fdSpawnMargin*fdSpawn+512*proxy.FDsPerConn); got != want {
		t.Errorf("fdNeed(1000, 10, 512) = %d, want %d", got, want)
	}
}

// TestFdWatchFiveThousand: 5000 units fit a descriptor limit of 20000
// (hard 20000, soft one less; no proxy): each holds 3 descriptors while
// it runs (pidfd, its output pipes) and opens its log only while it
// prints, at most reconciler.MaxOpenLogs of them at once. hermesd does
// not warn, and once all run the listeners keep off the spawns' margin
// and the logs the units may open, and have the rest.
func TestFdWatchFiveThousand(t *testing.T) {
	var buf bytes.Buffer
	w := newFDWatch(19999, 20000, false, slog.New(slog.NewTextHandler(&buf, nil)))
	specs := named("u", 5000)
	w.check(units.Config{}, &reconciler.Loaded{Specs: specs})
	if buf.Len() > 0 {
		t.Errorf("5000 units under a limit of 19999 warned: %s", buf.String())
	}
	if need := fdNeed(5000, 0, 0); need > 19999-1000 {
		t.Errorf("5000 units need %d descriptors, want room for 1000 more under 19999", need)
	}
	for i := range specs {
		w.observe(events.Event{Kind: events.UnitState, Unit: specs[i].Name, State: "running", PID: 1000 + i})
	}
	want := int64(19999 - fdBase - fdSpawnMargin*fdSpawn - reconciler.MaxOpenLogs)
	if got := w.reserve.Limit(); got != want {
		t.Errorf("5000 units running: listeners under %d, want %d (the logs they may open kept)", got, want)
	}
}

// TestFdWatchFollowsLoads: a load looks only at the units it changed
// (fdWatch.seen), and the count of notifying units and the reserve are
// those of a look at every unit: an edit that makes a unit notify, or
// stop notifying, counts; a removed unit leaves the running ones, and a
// late event of its run does not count it again.
func TestFdWatchFollowsLoads(t *testing.T) {
	w := newFDWatch(19999, 20000, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	specs := named("u", 5)
	load := func(specs []*units.Spec) { w.check(units.Config{}, &reconciler.Loaded{Specs: specs}) }
	running := func(name string) {
		w.observe(events.Event{Kind: events.UnitState, Unit: name, State: "running", PID: 1000})
	}
	want := func(step string, declared, holding int) {
		t.Helper()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.notify != notifying(w.specs) {
			t.Errorf("%s: %d notifying units counted, want %d", step, w.notify, notifying(w.specs))
		}
		pending := max(declared-holding, 0) + min(declared, fdSpawnMargin)
		if got, want := w.reserve.Limit(), int64(19999-fdReserve(pending, holding)); got != want {
			t.Errorf("%s: listeners under %d, want %d (%d units declared, %d running)", step, got, want, declared, holding)
		}
	}
	load(specs)
	for _, s := range specs {
		running(s.Name)
	}
	want("all running", 5, 5)
	edited := slices.Clone(specs)
	edited[1] = &units.Spec{Name: "u1", Ready: units.Ready{Notify: true}}
	load(edited)
	want("u1 notifies", 5, 5)
	edited = slices.Clone(edited)
	edited[1] = &units.Spec{Name: "u1"}
	load(edited)
	want("u1 no longer notifies", 5, 5)
	load(edited[:4])
	want("u4 removed", 4, 4)
	running("u4")
	want("a late event of u4", 4, 4)
	edited = slices.Clone(edited[:4])
	edited[2] = &units.Spec{Name: "u2", Timeouts: units.Timeouts{Watchdog: time.Second}}
	load(edited)
	want("u2 has a watchdog", 4, 4)
}

// noFile reads a process's RLIMIT_NOFILE from /proc/PID/limits.
func noFile(t *testing.T, pid int) (soft, hard uint64) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Max open files"); ok {
			fs := strings.Fields(rest)
			s, _ := strconv.ParseUint(fs[0], 10, 64)
			h, _ := strconv.ParseUint(fs[1], 10, 64)
			return s, h
		}
	}
	t.Fatalf("no Max open files in /proc/%d/limits", pid)
	return 0, 0
}

// TestDescriptorLimitAtStart: hermesd started with a low soft limit runs
// with the hard one; started with a hard limit too low for its declared
// units, it says so in its log, with the numbers and what to do.
func TestDescriptorLimitAtStart(t *testing.T) {
	needsProcesses(t, "hermesd processes")
	t.Run("soft raised to hard", func(t *testing.T) {
		dir := t.TempDir()
		writeUnits(t, dir, map[string]string{})
		d := startDaemonWith(t, dir, daemonOpts{shell: "ulimit -Sn 100"})
		if soft, hard := noFile(t, d.cmd.Process.Pid); soft+1 < hard {
			t.Errorf("hermesd runs with soft limit %d, hard %d; want the hard limit", soft, hard)
		}
	})
	t.Run("warns when short", func(t *testing.T) {
		dir := t.TempDir()
		writeUnits(t, dir, map[string]string{})
		for i := range 40 { // jobs: declared, not started at load
			writeFile(t, filepath.Join(dir, "units", fmt.Sprintf("job%02d.yaml", i)), fmt.Sprintf("command: [%q]\nschedule: \"0 0 1 1 *\"\n", os.Args[0]))
		}
		// Lowering the hard limit needs no privilege.
		d := startDaemonWith(t, dir, daemonOpts{shell: "ulimit -n 150"})
		want := fmt.Sprintf("descriptor limit 150 (RLIMIT_NOFILE, hard limit 150) cannot serve 40 units and the proxy's 0 connections: about %d needed", fdNeed(40, 0, 0))
		if err := testkit.WaitFile(filepath.Join(d.dir, "hermesd.log"), regexp.MustCompile(regexp.QuoteMeta(want)), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// Short of descriptors for its units, hermesd still answers its
		// owner: the control API is held to the limit, not to the
		// listeners' reserve (which took every descriptor, and refused
		// every call).
		c, err := control.Dial(d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		st, err := c.Status(t.Context())
		if err != nil {
			t.Fatalf("status of a hermesd short of descriptors: %v", err)
		}
		if len(st.Units) != 40 {
			t.Errorf("status lists %d units, want the 40 declared", len(st.Units))
		}
	})
	t.Run("units past the limit say why", func(t *testing.T) {
		// 60 units under a limit of 120: the first run, and the spawns
		// that find the table full fail naming hermesd's limit, not the
		// unit, while status still answers.
		dir := t.TempDir()
		files := map[string]string{}
		for i := range 60 {
			files[fmt.Sprintf("u%02d.yaml", i)] = "command: [sleep, \"100000\"]\nrestart: \"no\"\n"
		}
		testkit.WriteUnits(t, filepath.Join(dir, "units"), files)
		d := startDaemonWith(t, dir, daemonOpts{shell: "ulimit -n 120"})
		var short control.Unit
		testkit.EventuallyOK(t, 60*time.Second, func() error {
			running := 0
			for _, u := range d.status() {
				if strings.Contains(u.Error, "too many open files") {
					short = u
				}
				if u.State == control.StateRunning {
					running++
				}
			}
			if short.Name == "" || running == 0 {
				return fmt.Errorf("%d units running and none failed for lack of descriptors yet%s", running, d.logTail())
			}
			return nil
		})
		if !strings.Contains(short.Error, "hermesd is out of file descriptors: raise its hard limit") || strings.Contains(short.Error, "fix the unit") {
			t.Errorf("unit %s failed for lack of descriptors with %q: want the fix to name hermesd's limit, not the unit", short.Name, short.Error)
		}
	})
}

// TestFdReserveFollowsRunningUnits: the listeners' reserve is kept for
// the units that do not hold their descriptors yet, not for every unit
// declared: a running unit's descriptors are open already, below any
// connection accepted since. With 1000 units declared under a limit of
// 4096 the listeners keep nothing while nothing runs, and once all run
// the whole limit but the spawns' margin and the logs the units may open
// (fdReserve); a unit that ends takes its share back.
func TestFdReserveFollowsRunningUnits(t *testing.T) {
	w := newFDWatch(4096, 4096, true, slog.New(slog.DiscardHandler))
	w.check(units.Config{}, &reconciler.Loaded{Specs: named("u", 1000)})
	if got := w.reserve.Limit(); got != 1 {
		t.Errorf("1000 units declared, none running: listeners under %d, want 1 (none kept)", got)
	}
	for i := range 1000 {
		w.observe(events.Event{Kind: events.UnitState, Unit: fmt.Sprint("u", i), State: "running", PID: 1000 + i})
	}
	want := int64(4096 - fdReserve(fdSpawnMargin, 1000))
	if got := w.reserve.Limit(); got != want {
		t.Errorf("1000 units running: listeners under %d, want %d", got, want)
	}
	for i := range 10 {
		w.observe(events.Event{Kind: events.UnitState, Unit: fmt.Sprint("u", i), State: "failed"})
	}
	if got, want := w.reserve.Limit(), int64(4096-fdReserve(10+fdSpawnMargin, 990)); got != want {
		t.Errorf("10 of them ended: listeners under %d, want %d", got, want)
	}
	// A load that removes running units forgets them: nothing says
	// they ended once they are gone from the reconciler.
	w.check(units.Config{}, &reconciler.Loaded{Specs: named("v", 1000)})
	if got := w.reserve.Limit(); got != 1 {
		t.Errorf("1000 other units declared, none running: listeners under %d, want 1", got)
	}
}

// named are n specs named prefix0, prefix1...
func named(prefix string, n int) []*units.Spec {
	out := make([]*units.Spec, n)
	for i := range out {
		out[i] = &units.Spec{Name: fmt.Sprint(prefix, i)}
	}
	return out
}
