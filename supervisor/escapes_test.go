//go:build linux

package supervisor

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// escapeRuns is how many times TestEscapes plays each of its rows (make
// escapes ESCAPE_RUNS=200 asks for the 200 of the bar).
var escapeRuns = flag.Int("escapes.runs", 1, "TestEscapes: how many times each row is played")

// escapeCase is a unit that leaves its process group as daemons do. Its
// script runs as the unit's leader; every process it starts carries tok
// (its sleeps are "sleep tok0", "sleep tok1"…; its shells hold tok in
// their command line) or serves the redis port. It writes the escapee's
// pid to the file E, and says "born" (escapePrologue).
type escapeCase struct {
	name   string
	script string // %[1]s: tok, %[2]d: the redis port, %[3]s: a directory of its own
	needs  string // a program it needs on PATH
	// portable says why the case cannot hold without a subreaper and
	// without marks (the portable backend, darwin's) when the owner is
	// killed early or late; "" when it holds.
	portableEarly, portableLate string
}

var escapeCases = []escapeCase{
	{name: "env -i escapee", script: `setsid env -i sleep %[1]s1 & echo $! >'%[3]s/E'
born; exec sleep %[1]s0`},
	{name: "setproctitle daemon, redis --daemonize yes", needs: "redis-server",
		script: `redis-server --port %[2]d --daemonize yes --save '' --appendonly no --pidfile '%[3]s/E' --dir '%[3]s' >/dev/null & f=$!
forked "$f"; wait "$f"
born "$e"; exec sleep %[1]s0`,
		portableEarly: "its parent exits at once (re-parented to init), its process title erases its tags, and ps shows no mark",
		portableLate:  "as killed early: no scan can name it either"},
	{name: "double fork, middle exited", script: `sh -c 'setsid sleep %[1]s1 & echo $! >"$1"; exit 0' sh '%[3]s/E'
born; exec sleep %[1]s0`,
		portableEarly: "re-parented to init at once; only a scan (by its tags) names it, and none ran before the kill"},
	{name: "chain of three setsids", script: `export F='%[3]s/E'
export L3=': %[1]s; exec sleep %[1]s3'
export L2=': %[1]s; setsid sh -c "$L3" & echo $! >"$F"; wait'
export L1=': %[1]s; setsid sh -c "$L2" & wait'
setsid sh -c "$L1" &
born; exec sleep %[1]s0`},
}

// escapePrologue defines born for an escapeCase's script: it waits for
// the escapee's pid in the file E, looking without a pause at first (a
// pause is a fork of sleep: slow on a loaded machine), then every 5 ms.
// It writes the escapee's start time (clock ticks since boot, read by the
// shell's builtins) to T, and prints "ok". When its owner handed it its
// pid (envOwnerPID: the owner under test of an early row), it kills that
// owner with SIGKILL itself, so that the kill comes within milliseconds of
// the birth even on a loaded machine; T then also holds the time since
// boot just before the kill (seconds, /proc/uptime), written first. A
// killer says no "ok": a write to its dead owner's pipe would end it
// (SIGPIPE) and re-parent its escapee to init before the supervisor reads
// the table, which is the double fork's row, not this one. An escapee
// that never comes (a daemon that failed to start) ends the script after
// 30 s, without "ok": its owner then says it did not get ready, and the
// row fails instead of waiting for ever.
//
// A daemon writes its pid file well after its fork (redis: once it has
// set up), too late for a kill near the birth. A killer's script finds
// the daemon with forked instead: the first child of the program it ran,
// read from /proc while the program lives (it exits just after its fork),
// else, when the program was gone first, among the 512 pids after the
// program's, a redis-server whose command line names the unit's port. It
// hands the pid to born, which kills at once; the other scripts wait for
// E, to know the daemon runs.
//
// A killer's script runs ahead of the machine's other work (nice -10,
// where it may: root), and so does all it starts, escapees included: on a
// loaded machine, the time from birth to kill is then its own work, not a
// wait for a core.
const escapePrologue = `if [ "${ESCAPE_OWNER:-0}" -gt 1 ]; then renice -n -10 $$ >/dev/null 2>&1 || :; fi
forked() {
  e=
  [ "${ESCAPE_OWNER:-0}" -gt 1 ] || return 0
  while :; do
    read -r e 2>/dev/null <"/proc/$1/task/$1/children" || :
    if [ -n "$e" ]; then e=${e%%%% *}; return 0; fi
    read -r st 2>/dev/null <"/proc/$1/stat" || break
    case "$st" in *") Z "*) break ;; esac
  done
  p=$(($1 + 1))
  while [ -z "$e" ] && [ "$p" -le $(($1 + 512)) ]; do
    st= cl=
    read -r st 2>/dev/null <"/proc/$p/stat" || :
    case "$st" in *"(redis-server)"*)
      read -r cl 2>/dev/null <"/proc/$p/cmdline" || :
      case "$cl" in *--port%[2]d--*|*:%[2]d*) e=$p ;; esac ;;
    esac
    p=$((p + 1))
  done
}
born() {
  e=
  if [ "${ESCAPE_OWNER:-0}" -gt 1 ]; then e=${1:-}; fi
  i=0
  while [ -z "$e" ] && [ ! -s '%[3]s/E' ]; do
    i=$((i + 1))
    if [ "$i" -gt 20000 ]; then
      [ "$i" -le 26000 ] || { echo "no escapee: %[3]s/E still empty after 30 s" >&2; exit 1; }
      sleep 0.005
    fi
  done
  [ -n "$e" ] || read -r e <'%[3]s/E'
  read -r st <"/proc/$e/stat"
  set -- $st
  if [ "${ESCAPE_OWNER:-0}" -gt 1 ]; then
    read -r up _ </proc/uptime
    echo "${22} $up" >'%[3]s/T'
    kill -KILL "$ESCAPE_OWNER"
    return
  else
    echo "${22}" >'%[3]s/T'
  fi
  echo ok
}
`

// TestEscapes is the survivors matrix's rows for units whose processes
// leave their group (issue 24): an env -i escapee, a daemon whose process
// title overwrites its environment, a double fork whose middle process
// exited, a chain of three setsids. Each row kills the owner with SIGKILL
// (a) early: by the unit's own script, as soon as its escapees are born
// (the time from their birth to the kill is reported, and how many plays
// had it within 50 ms; the scan that runs each second has not run yet),
// and (b) late: once a scan of the owner ran after
// their birth; in each mode this machine has and with the portable
// backend. A control owner running the same unit is never killed: every
// one of its processes must be alive after the kill. -escapes.runs plays
// each row that many times; -escapes.parallel plays that many at once
// (rows and runs mixed), each with owners, directories, ports and tokens
// of its own.
func TestEscapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts owners and daemons")
	}
	var table []*escapeResult
	t.Cleanup(func() { t.Log(escapeTable(table)) })
	// A play waits for its turn in slots: most of a play is waiting (for
	// a scan, for a supervisor's grace), so plays overlap well; few at
	// once keep an early kill within milliseconds of the birth.
	slots := make(chan struct{}, max(*escapeParallel, 1))
	var until time.Time
	if *escapeFor > 0 {
		until = time.Now().Add(*escapeFor)
	}
	var rows sync.WaitGroup
	for _, su := range setups(t) {
		for _, c := range escapeCases {
			for _, late := range []bool{false, true} {
				when := "early"
				if late {
					when = "late"
				}
				res := &escapeResult{row: su.String() + "/" + c.name + "/" + when}
				if su.backend == BackendPortable {
					res.limit = c.portableEarly
					if late {
						res.limit = c.portableLate
					}
				}
				table = append(table, res)
				rows.Add(1)
				go func() {
					defer rows.Done()
					t.Run(res.row, func(t *testing.T) {
						if c.needs != "" {
							if _, err := exec.LookPath(c.needs); err != nil {
								t.Skipf("no %s on PATH", c.needs)
							}
						}
						escapeRow(t, su, c, late, res, slots, until)
					})
				}()
			}
		}
	}
	rows.Wait()
}

// escapeParallel is how many plays of TestEscapes run at once;
// escapeFor, once passed, stops it starting plays (0: never), so that a
// run of it fits a time: the table says how many plays each row had.
var (
	escapeParallel = flag.Int("escapes.parallel", 4, "TestEscapes: how many plays (of any rows) run at once")
	escapeFor      = flag.Duration("escapes.for", 0, "TestEscapes: start no play once this long has passed (0: no limit)")
	escapeQuick    = flag.Bool("escapes.quick", false, "TestEscapes: an early row plays until -escapes.runs of its plays were killed within 50 ms of the birth (at most twice that many plays)")
)

// escapeResult is one row of TestEscapes's table: its plays, the unit's
// processes that survived them, the control's that died, and the longest
// time from birth to kill of its early plays. The row's plays add to it
// under mu.
type escapeResult struct {
	row                 string
	mu                  sync.Mutex
	runs, found, ctlBad int
	failed              int // plays that failed before their end (not in runs)
	maxDelay            time.Duration
	quick               int // early plays killed within 50 ms of the birth
	limit               string
}

// escapeTable is the table TestEscapes logs.
func escapeTable(table []*escapeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-72s %5s %6s %9s %13s %14s %s\n", "row", "runs", "failed", "survivors", "control lost", "max birth→kill", "≤ 50 ms")
	for _, r := range table {
		r.mu.Lock()
		d, q := "-", "-"
		if strings.HasSuffix(r.row, "/early") {
			d, q = r.maxDelay.String(), strconv.Itoa(r.quick)
		}
		fmt.Fprintf(&b, "%-72s %5d %6d %9d %13d %14s %s\n", r.row, r.runs, r.failed, r.found, r.ctlBad, d, q)
		r.mu.Unlock()
	}
	for _, r := range table {
		if r.limit != "" {
			fmt.Fprintf(&b, "limit, %s: %s\n", r.row, r.limit)
		}
	}
	return b.String()
}

// escapeRow plays row (su, c, late) -escapes.runs times, each play a
// subtest of its own that waits for one of slots (testkit.Plays); it
// stops starting plays once one failed, or once until (if set) passed.
// With -escapes.quick, an early row plays on until -escapes.runs of its
// plays were killed within 50 ms of the birth, as the row asks, so that a
// loaded machine's late kills are played again rather than counted as
// early ones; at most twice -escapes.runs plays.
func escapeRow(t *testing.T, su setup, c escapeCase, late bool, res *escapeResult, slots chan struct{}, until time.Time) {
	failed, most := 0, 2*(*escapeRuns)
	for want := *escapeRuns; want > 0 && res.runs < most && !t.Failed(); {
		failed += testkit.Plays(t, min(want, most-res.runs), slots, until, escapePlay(su, c, late, res))
		if late || !*escapeQuick || (!until.IsZero() && time.Now().After(until)) {
			break
		}
		res.mu.Lock()
		want = *escapeRuns - res.quick
		res.mu.Unlock()
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	res.failed += failed
	if res.found > 0 && res.limit == "" {
		t.Errorf("%d processes of the unit survived the owner's SIGKILL in %d runs, want 0", res.found, res.runs)
	}
	if res.ctlBad > 0 {
		t.Errorf("the control owner lost %d processes in %d runs, want none: the kill was not confined to the killed owner's units", res.ctlBad, res.runs)
	}
}

// escapePlay is one play of row (su, c, late), adding to res.
func escapePlay(su setup, c escapeCase, late bool, res *escapeResult) func(t *testing.T) {
	return func(t *testing.T) {
		found, ctlBad, delay := escapeRun(t, su, c, late)
		res.mu.Lock()
		defer res.mu.Unlock()
		res.runs++
		res.found += found
		res.ctlBad += ctlBad
		res.maxDelay = max(res.maxDelay, delay)
		if !late && delay <= 50*time.Millisecond {
			res.quick++
		}
	}
}

// escapeRun plays one run of case c: a control owner and the owner under
// test run c's unit; the latter is killed (late: once a scan ran after
// the escapees' birth). It returns the unit's processes left alive, the
// control's processes that died, and the time from the escapees' birth
// to the kill (early runs; 10 ms resolution).
func escapeRun(t *testing.T, su setup, c escapeCase, late bool) (found, ctlLost int, delay time.Duration) {
	t.Helper()
	vTok, cTok := escapeToken(), escapeToken()
	ports := testkit.FreePorts(t, 2)
	vPort, cPort := ports[0], ports[1]
	vDir, cDir := t.TempDir(), t.TempDir()
	owner := func(tk string, p int, dir string, killer bool) *ownerProc {
		f := family{kind: "script", lines: 1, n: 1, owners: 1, killer: killer, script: fmt.Sprintf(escapePrologue+c.script, tk, p, dir)}
		return startOwner(t, f, su, "escapes", t.TempDir(), 0)
	}
	// Only processes born after the play began count (and are killed at
	// its end): a process of another test with the same token is older.
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	since := uint64(time.Duration(ts.Nano())/(time.Second/proc.ClockTicks)) - 1
	alive := func(tk string, p int) []int { return escapeMembers(tk, p, since) }
	defer func() {
		for _, pid := range append(alive(vTok, vPort), alive(cTok, cPort)...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	ctl := owner(cTok, cPort, cDir, false)
	// The control's unit lives before the owner under test starts: an
	// early row kills that owner as soon as its own unit's escapees are
	// born, which on a loaded machine came before the control's unit had
	// any process, and left nothing to compare.
	testkit.Eventually(t, 10*time.Second, "the control owner's unit to have a live process", func() bool { return len(alive(cTok, cPort)) > 0 })
	v := owner(vTok, vPort, vDir, !late)
	sup := v.sup // early: printed before the spawn; the unit kills v
	if !late && sup == 0 {
		t.Fatal("the owner under test did not say its supervisor's pid")
	}
	if late {
		// pgroup mode: once a scan ran after the birth; cgroup mode
		// has no scans (the cgroup holds every escapee): a scan's
		// period after it.
		if su.mode == ModePGroup {
			waitScan(t, v, time.Now())
		} else {
			time.Sleep(escapeeScan)
		}
		sup = int(ownerStatus(t, v)[0])
		v.cmd.Process.Signal(syscall.SIGKILL)
	}
	waitKilled(t, v)
	if !late {
		delay = escapeDelay(t, vDir)
	}
	ctlBefore := alive(cTok, cPort)
	// Done when the killed owner's supervisor has finished (a zombie
	// has: some inits do not reap orphans).
	if sup != 0 {
		testkit.Within(testGrace+10*time.Second, func() bool {
			st, err := proc.ReadStat(sup)
			return err != nil || st.Zombie()
		})
	}
	// A process TERMed or KILLed a moment ago may take a moment to go
	// (looked for every 100 ms: a look reads every process's command
	// line, and a row with a limit waits the whole 2 s).
	for end := time.Now().Add(2 * time.Second); len(alive(vTok, vPort)) > 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	found = len(alive(vTok, vPort))
	ctlLost = max(len(ctlBefore)-len(alive(cTok, cPort)), 0)
	if len(ctlBefore) == 0 {
		t.Errorf("the control owner's unit has no live process before the kill")
	}
	ctl.in.Close()
	ctl.cmd.Wait()
	return found, ctlLost, delay
}

// waitKilled waits for owner o's death by SIGKILL (an early row's unit
// kills it itself); after two minutes it kills o and fails the play.
func waitKilled(t *testing.T, o *ownerProc) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- o.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("owner %d ended by %v, want SIGKILL", o.cmd.Process.Pid, err)
		}
	case <-time.After(2 * time.Minute):
		o.cmd.Process.Kill()
		<-done
		t.Errorf("owner %d not killed within 2 minutes", o.cmd.Process.Pid)
	}
}

// escapeDelay reads an early row's file T: the escapee's start time (in
// clock ticks since boot) and the time since boot just before the unit
// killed its owner (in seconds); it returns the time between them (10 ms
// resolution).
func escapeDelay(t *testing.T, dir string) time.Duration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "T"))
	f := strings.Fields(string(b))
	if err != nil || len(f) != 2 {
		t.Errorf("the unit did not say when its escapee was born and when it killed its owner (T: %q, %v)", b, err)
		return 0
	}
	ticks, err1 := strconv.ParseInt(f[0], 10, 64)
	up, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil {
		t.Errorf("T: %q", b)
		return 0
	}
	// /proc's start times are in USER_HZ ticks, 100 a second.
	return max(time.Duration(up*float64(time.Second))-time.Duration(ticks)*10*time.Millisecond, 0)
}

// escapeTokens are the tokens this test process handed out: plays that
// run at once never share one, so none counts or kills another's
// processes.
var (
	escapeTokensMu sync.Mutex
	escapeTokens   = map[string]bool{}
)

// escapeToken is a token no other play of this process had: six digits,
// random (another test process's plays are unlikely to draw the same).
func escapeToken() string {
	escapeTokensMu.Lock()
	defer escapeTokensMu.Unlock()
	for {
		tok := strconv.Itoa(100000 + rand.IntN(899999))
		if !escapeTokens[tok] {
			escapeTokens[tok] = true
			return tok
		}
	}
}

// ownerStatus asks owner o (playOwner) for its status line's numbers.
func ownerStatus(t *testing.T, o *ownerProc) []int64 {
	t.Helper()
	if _, err := io.WriteString(o.in, "status\n"); err != nil {
		t.Fatalf("ask owner %d: %v", o.cmd.Process.Pid, err)
	}
	l, err := o.out.ReadString('\n')
	if err != nil {
		t.Fatalf("owner %d: %v", o.cmd.Process.Pid, err)
	}
	var out []int64
	for _, f := range strings.Fields(l) {
		n, _ := strconv.ParseInt(f, 10, 64)
		out = append(out, n)
	}
	for len(out) < 6 {
		out = append(out, 0)
	}
	return out
}

// waitScan asks owner o (playOwner) until it reports a scan for escapees
// that began after since and ended, and the supervisor's answer to every
// registration it made, for up to 60 s (a scan reads every process's
// environment: slow on a crowded, loaded machine); the failure says which
// of the two it still lacks.
func waitScan(t *testing.T, o *ownerProc, since time.Time) {
	t.Helper()
	var st []int64
	testkit.EventuallyOK(t, 60*time.Second, func() error {
		st = ownerStatus(t, o) // PID GROUPS ESCAPEES SCANNED ORPHANS UNANSWERED
		if st[3] <= since.UnixNano() {
			return fmt.Errorf("owner %d: no scan began after %v and ended (last began %v)",
				o.cmd.Process.Pid, since.Format(time.StampMicro), time.Unix(0, st[3]).Format(time.StampMicro))
		}
		if st[5] != 0 {
			return fmt.Errorf("owner %d: %d registrations not answered by its supervisor", o.cmd.Process.Pid, st[5])
		}
		return nil
	})
}

// escapeMembers lists the live processes of an escape unit born at or
// after since (clock ticks since boot): its sleeps ("sleep tokD"), its
// shells (": tok;" in their command line), and the redis serving port.
func escapeMembers(tok string, port int, since uint64) []int {
	pids, _ := proc.Find(func(st proc.Stat) bool { return !st.Zombie() && st.StartTime >= since })
	var out []int
	for _, pid := range pids {
		argv, err := proc.Cmdline(pid)
		if err != nil {
			continue
		}
		cl := strings.Join(argv, " ")
		f := strings.Fields(cl) // a process title pads its command line
		sleeps := len(f) == 2 && f[0] == "sleep" && len(f[1]) == len(tok)+1 && strings.HasPrefix(f[1], tok)
		// redis before its process title: its arguments.
		redis := len(f) > 0 && f[0] == "redis-server" && (len(f) == 2 && strings.HasSuffix(f[1], ":"+strconv.Itoa(port)) ||
			strings.Contains(cl, "--port "+strconv.Itoa(port)+" "))
		if sleeps || redis || strings.Contains(cl, ": "+tok+";") {
			out = append(out, pid)
		}
	}
	return out
}
