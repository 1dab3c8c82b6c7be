package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
)

// supervisorGrace is hermesd's TERM→KILL grace at its death
// (supervisor.DefaultGrace); ownedSlack is what the harness allows beyond
// it for the supervisor to notice EOF, poll, and the kernel to tear down.
const (
	supervisorGrace = 3 * time.Second
	ownedSlack      = 3 * time.Second
	settleBound     = 20 * time.Second
)

// playRound plays one round: settle and check the running state, act and
// inject the fault, check what the death left, start hermesd again and check
// the re-adoption.
func (h *harness) playRound(ctx context.Context) error {
	h.round++
	h.cur.moment, h.cur.fault = "steady", "-"
	before := h.steady(ctx)
	moment, fault := h.sched.moment(h.cg != nil && h.cg.oom == "")
	h.cur.moment, h.cur.fault = moment, fault
	h.moments[moment]++
	touched := h.act(ctx, moment, fault)
	h.faults[fault]++
	left, orphans := h.afterDeath(fault, before, touched)
	h.cur.moment, h.cur.fault = moment+" → restart", fault
	d, err := h.start(ctx)
	if err != nil {
		h.violate("hermesd does not start again on the same state directory: %v", err)
		return err
	}
	h.d = d
	h.ended(orphans)
	h.readopted(ctx, left)
	if h.verbose {
		fmt.Printf("round %d: %s, %s, touched %v, survivors %d\n", h.round, moment, fault, touched, len(left))
	}
	return nil
}

// steady waits until every unit runs and is ready, then checks that each
// has exactly one live group, led by the pid status shows, and recorded in
// the ledger. It returns the live leader of each unit.
func (h *harness) steady(ctx context.Context) map[string]marked {
	var st control.Status
	var err error
	deadline := time.Now().Add(settleBound)
	for {
		st, err = h.status(ctx)
		if err == nil && allRunning(st) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			h.violate("units not all running and ready %v after hermesd's start: %s (status error: %v)", settleBound, describe(st), err)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	ps := scan(h.run)
	byUnit, leaders := groups(ps)
	out := map[string]marked{}
	for _, d := range unitSet {
		for _, u := range st.Units {
			if u.Name != d.name || u.PID == 0 {
				continue
			}
			l, ok := leaders[u.PID]
			if !ok || l.unit != d.name {
				h.violate("unit %s: status shows pid %d, which is not a live leader of the unit (live: %s; %s)", d.name, u.PID, listUnit(ps, d.name), describePID(u.PID))
				continue
			}
			out[d.name] = l
		}
		if gs := byUnit[d.name]; len(gs) > 1 {
			h.violate("duplicate: unit %s has %d live groups %v: %s", d.name, len(gs), gs, listUnit(ps, d.name))
			// Repair, so that the next rounds are judged on their own:
			// the groups hermesd does not show are killed.
			for _, p := range ps {
				if p.unit == d.name && p.pgid != out[d.name].pgid {
					syscall.Kill(p.pid, syscall.SIGKILL)
					delete(leaders, p.pid)
				}
			}
		}
	}
	// An owned spawn's record may trail its start by one ledger write
	// (SpawnOwned queues it): allow it a moment before calling it missing.
	deadline = time.Now().Add(2 * time.Second)
	for !h.recorded(leaders) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	h.ledgerComplete(leaders, "steady")
	return out
}

// recorded reports whether the ledger parses and has an entry for every
// leader of leaders (see ledgerComplete, which says what is wrong).
func (h *harness) recorded(leaders map[int]marked) bool {
	b, _ := os.ReadFile(filepath.Join(h.state, ledger.FileName))
	es, err := ledger.Parse(b)
	if err != nil {
		return false
	}
	for _, l := range leaders {
		if !slices.ContainsFunc(es, func(e ledger.Entry) bool { return e.Leader.PID == l.pid && e.Leader.StartTime == l.start }) {
			return false
		}
	}
	return true
}

func allRunning(st control.Status) bool {
	n := 0
	for _, u := range st.Units {
		if _, ok := defOf(u.Name); ok {
			if u.State != control.StateRunning || !u.Ready {
				return false
			}
			n++
		}
	}
	return n == len(unitSet)
}

func describe(st control.Status) string {
	var b []string
	for _, u := range st.Units {
		b = append(b, fmt.Sprintf("%s=%s(pid %d ready %v adopted %v err %q)", u.Name, u.State, u.PID, u.Ready, u.Adopted, u.Error))
	}
	return strings.Join(b, " ")
}

func listUnit(ps []marked, unit string) string {
	var b []string
	for _, p := range ps {
		if p.unit == unit {
			b = append(b, fmt.Sprintf("pid %d pgid %d", p.pid, p.pgid))
		}
	}
	if len(b) == 0 {
		return "none"
	}
	return strings.Join(b, ", ")
}

// ledgerComplete checks that the ledger parses, that nothing was set aside
// as corrupt, and that each live group leader has an entry with its
// identity. It reports whether all held.
func (h *harness) ledgerComplete(leaders map[int]marked, when string) bool {
	n := len(h.violations)
	b, err := os.ReadFile(filepath.Join(h.state, ledger.FileName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.violate("ledger unreadable (%s): %v", when, err)
		return false
	}
	es, err := ledger.Parse(b)
	if err != nil {
		h.violate("ledger does not parse (%s): %v", when, err)
		return false
	}
	if cs, _ := filepath.Glob(filepath.Join(h.state, ledger.FileName+".corrupt-*")); len(cs) > 0 {
		h.violate("ledger was set aside as corrupt (%s): %v", when, cs)
		for _, c := range cs {
			os.Rename(c, c+".seen")
		}
	}
	for _, l := range leaders {
		found := 0
		for _, e := range es {
			if e.Leader.PID == l.pid && e.Leader.StartTime == l.start {
				found++
				if e.Unit != l.unit {
					h.violate("ledger (%s): pid %d recorded as unit %s, is unit %s", when, l.pid, e.Unit, l.unit)
				}
			}
		}
		if found != 1 {
			h.violate("ledger (%s): live spawn %s recorded %d times, want once", when, l, found)
		}
	}
	return len(h.violations) == n
}

// act performs the round's activity and delivers the fault; it returns once
// hermesd has exited (killed after a bound if it does not), with the units
// whose processes the activity may have stopped or replaced.
func (h *harness) act(ctx context.Context, moment, fault string) []string {
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var touched []string
	var mu sync.Mutex // guards touched while the activity runs
	touch := func(u string) {
		mu.Lock()
		if !slices.Contains(touched, u) {
			touched = append(touched, u)
		}
		mu.Unlock()
	}
	restart := func(u string) {
		touch(u)
		wg.Go(func() { h.restartUnit(actx, u) })
	}
	switch moment {
	case momentIdle:
		time.Sleep(h.sched.between(0, 200*time.Millisecond))
	case momentStorm:
		n, gap, lead := 5+h.sched.intn(60), h.sched.between(time.Millisecond, 8*time.Millisecond), h.sched.between(0, 400*time.Millisecond)
		var plan []unitDef
		var atomic []bool
		for range n {
			plan = append(plan, unitSet[h.sched.intn(len(unitSet))])
			atomic = append(atomic, h.sched.intn(2) == 0)
		}
		wg.Go(func() {
			for i, d := range plan {
				if actx.Err() != nil {
					return
				}
				touch(d.name)
				h.gens[d.name]++ // only this goroutine writes gens while it runs
				if err := writeUnit(h.units, d, h.gens[d.name], atomic[i]); err != nil {
					fmt.Fprintln(os.Stderr, "chaos: write unit:", err)
				}
				time.Sleep(gap)
			}
		})
		time.Sleep(lead)
	case momentSpawn:
		u := unitSet[h.sched.intn(len(unitSet))].name
		after := h.sched.between(0, 3*time.Millisecond)
		old := leaderPID(scan(h.run), u)
		restart(u)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if p := leaderPID(scan(h.run), u); p != 0 && p != old {
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		time.Sleep(after)
	case momentLedger:
		n := 1 + h.sched.intn(3)
		for range n {
			restart(unitSet[h.sched.intn(len(unitSet))].name)
		}
		skip := h.sched.intn(3) // hit the first, second or third write seen
		deadline := time.Now().Add(3 * time.Second)
		seen, last := 0, ""
		for time.Now().Before(deadline) && seen <= skip {
			if t := ledgerTemp(h.state); t != "" && t != last {
				seen, last = seen+1, t
				continue
			}
			time.Sleep(100 * time.Microsecond)
		}
	case momentStop:
		h.d.cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(h.sched.between(time.Millisecond, 40*time.Millisecond))
	}
	h.deliver(ctx, strings.TrimPrefix(fault, "term+"))
	return touched
}

// leaderPID is the pid of unit's live group leader, 0 when none.
func leaderPID(ps []marked, unit string) int {
	for _, p := range ps {
		if p.unit == unit && p.pid == p.pgid && !p.escapee() {
			return p.pid
		}
	}
	return 0
}

// ledgerTemp names a ledger temporary file in dir ("" when none): a
// write is in flight.
func ledgerTemp(dir string) string {
	f, err := os.Open(dir)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if strings.HasPrefix(n, ledger.FileName+".tmp-") {
			return n
		}
	}
	return ""
}

// deliver injects fault into hermesd and waits for it to exit.
func (h *harness) deliver(ctx context.Context, fault string) {
	d := h.d
	bound := 10 * time.Second
	switch fault {
	case faultKill:
		d.cmd.Process.Signal(syscall.SIGKILL)
	case faultTerm:
		d.cmd.Process.Signal(syscall.SIGTERM)
		bound = 30 * time.Second // the clean stop: each owned unit's stop grace
	case faultPanic:
		d.cmd.Process.Signal(syscall.SIGUSR2)
	case faultBoth:
		sup := testkit.SupervisorOf(d.cmd.Process.Pid)
		d.cmd.Process.Signal(syscall.SIGSTOP) // it must not restart the supervisor
		if sup != 0 {
			syscall.Kill(sup, syscall.SIGKILL)
		}
		h.supKilled = sup != 0
		d.cmd.Process.Signal(syscall.SIGKILL)
	case faultSupStop:
		h.stopSupervisor(ctx)
	case faultOOM:
		if ok, err := h.cg.oomKill(d); err != nil || !ok {
			h.violate("the OOM fault did not end hermesd (err %v, oom_kill %s)", err, h.cg.oomEvents())
		}
	}
	if !d.exited(bound) {
		h.violate("hermesd still running %v after %s; killed", bound, fault)
		d.cmd.Process.Kill()
		<-d.done
		return
	}
	if !d.alive() {
		h.checkExit(fault, d.err)
	}
}

// checkExit checks that hermesd ended the way the fault says.
func (h *harness) checkExit(fault string, err error) {
	var ee *exec.ExitError
	errors.As(err, &ee)
	switch fault {
	case faultTerm:
		if h.cur.fault == faultTerm && err != nil {
			h.violate("clean stop (SIGTERM) ended with %v, want exit 0", err)
		}
	case faultPanic:
		if ee == nil || ee.ExitCode() != 2 {
			// It may have finished a clean stop first (term+panic).
			if !strings.HasPrefix(h.cur.fault, "term+") || err != nil {
				h.violate("injected panic: hermesd ended with %v, want exit status 2", err)
			}
		}
	}
}

// afterDeath checks what hermesd's death left: no owned process beyond the
// supervisor's grace (unless the supervisor died with hermesd: those are
// returned as orphans, for the next hermesd to end); survivors that the
// round did not touch still alive with the same identity; at most one
// group per survivor unit, each with a live leader recorded in the ledger.
// It returns the survivors' leaders.
func (h *harness) afterDeath(fault string, before map[string]marked, touched []string) (map[string]marked, []marked) {
	var orphans []marked
	if fault == faultBoth && h.supKilled {
		h.supKilled = false
		orphans = ofKind(scan(h.run), owned)
	} else {
		deadline := time.Now().Add(supervisorGrace + ownedSlack)
		var left []marked
		for {
			left = ofKind(scan(h.run), owned)
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, p := range left {
			h.violate("owned process alive %v after hermesd's death: %s", supervisorGrace+ownedSlack, p)
		}
		killAll(left)
	}

	ps := ofKind(scan(h.run), survivor)
	byUnit, leaders := groups(ps)
	out := map[string]marked{}
	for _, u := range unitNames(survivor) {
		gs := byUnit[u]
		if len(gs) > 1 {
			h.violate("duplicate: survivor unit %s has %d live groups after hermesd's death: %s", u, len(gs), listUnit(ps, u))
		}
		for _, g := range gs {
			l, ok := leaders[g]
			if !ok && slices.Contains(touched, u) {
				// A stop or restart of u cut short by the death: its
				// leader took the signal, a member had not yet. The next
				// gateway ends what is left (found by the spawn's tags)
				// before it starts u: the check after the restart finds
				// a duplicate if it did not.
				continue
			}
			if !ok {
				h.violate("survivor unit %s: group %d has live members but no live leader: cannot be re-adopted (%s)", u, g, listUnit(ps, u))
				continue
			}
			out[u] = l
		}
		b, was := before[u]
		if !was || slices.Contains(touched, u) {
			continue
		}
		if l, ok := out[u]; !ok || l.pid != b.pid || l.start != b.start {
			h.violate("survivor %s (pid %d), untouched this round, did not outlive hermesd's %s: now %s", u, b.pid, fault, listUnit(ps, u))
		}
	}
	if !h.ledgerComplete(leaders, "after the death") {
		// Repair: a survivor the ledger does not know cannot be
		// re-adopted and would be a duplicate for every later round.
		for u, l := range out {
			if !h.recorded(map[int]marked{l.pid: l}) {
				syscall.Kill(-l.pgid, syscall.SIGKILL)
				delete(out, u)
			}
		}
	}
	return out, orphans
}

// ended checks, once hermesd runs again (after READY=1), that the owned
// processes the previous hermesd left when it died with its supervisor
// are gone: the new one ends them before it starts its own copies (each
// unit is declared). Any left is killed, so that later rounds are judged
// on their own.
func (h *harness) ended(orphans []marked) {
	if len(orphans) == 0 {
		return
	}
	deadline := time.Now().Add(ownedSlack)
	var left []marked
	for {
		left = left[:0]
		for _, p := range scan(h.run) {
			if slices.ContainsFunc(orphans, func(o marked) bool { return o.pid == p.pid && o.start == p.start }) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range left {
		h.violate("owned process of the hermesd killed with its supervisor still alive after the next hermesd's start: %s", p)
	}
	killAll(left)
}

// readopted checks, once hermesd runs again and has settled, that each
// survivor alive before its start is re-adopted exactly once: listed once,
// same pid, adopted, running, one ledger entry.
func (h *harness) readopted(ctx context.Context, left map[string]marked) {
	if len(left) == 0 {
		return
	}
	st, err := h.status(ctx)
	if err != nil {
		h.violate("status after restart: %v", err)
		return
	}
	for u, l := range left {
		var seen []control.Unit
		for _, x := range st.Units {
			if x.Name == u {
				seen = append(seen, x)
			}
		}
		switch {
		case len(seen) != 1:
			h.violate("survivor %s listed %d times in status after restart, want once", u, len(seen))
		case seen[0].PID != l.pid || !seen[0].Adopted:
			h.violate("survivor %s (pid %d) not re-adopted: status shows pid %d adopted=%v state %s", u, l.pid, seen[0].PID, seen[0].Adopted, seen[0].State)
		}
	}
}
