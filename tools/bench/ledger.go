package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// Ledger contention: writers separate processes, each adding spawns one at
// a time, all at once.
const (
	ledgerWriters = 16
	ledgerSpawns  = 100
)

func init() {
	children["ledger-writer"] = ledgerWriter
}

// benchLedger runs the contention twice on fresh state directories: with
// the writers' line (the default on Linux) and without it (writers started
// with HERMES_LEDGER_QUEUE=off: the flock alone, as on darwin and FreeBSD),
// and compares how fair the two are.
func benchLedger(ctx context.Context) ([]Row, error) {
	line, err := ledgerContend(ctx, true)
	if err != nil {
		return nil, err
	}
	rows := ledgerRows(line)
	want := ledgerWriters * ledgerSpawns
	if line.kept != want {
		return rows, fmt.Errorf("ledger kept %d of %d entries", line.kept, want)
	}
	off, err := ledgerContend(ctx, false)
	if err != nil {
		return rows, err
	}
	rows = append(rows, ledgerFairRows(line, off)...)
	if off.kept != want {
		return rows, fmt.Errorf("ledger without the line kept %d of %d entries", off.kept, want)
	}
	return rows, nil
}

// ledgerRun is what one contention run measured.
type ledgerRun struct {
	kept, size   int             // distinct units in the file after it, its bytes
	elapsed      time.Duration   // from the first "go" to the last report
	waits, holds []time.Duration // of every Add: lock wait, the rest
	finish       []time.Duration // of every writer: from its "go" to its last Add done
}

// ledgerContend starts ledgerWriters processes on one fresh state
// directory, in the writers' line or (inLine false) out of it. Each says
// "ready", waits for "go", adds ledgerSpawns entries one Add at a time
// (each led by the writer itself, so that pruning keeps them while it
// lives), prints the lock wait of each Add in nanoseconds and "done" with
// its time from "go", then stays alive until its stdin closes. The parent
// counts the entries before closing the pipes.
func ledgerContend(ctx context.Context, inLine bool) (r ledgerRun, err error) {
	dir, err := os.MkdirTemp("", "hermes-bench-ledger-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	var ws []*ledgerProc
	defer func() {
		for _, w := range ws {
			w.stdin.Close()
			_ = w.cmd.Wait()
		}
	}()
	for i := range ledgerWriters {
		w, err := startLedgerWriter(ctx, dir, i, inLine)
		if w != nil {
			ws = append(ws, w)
		}
		if err != nil {
			return r, err
		}
	}
	start := time.Now()
	for _, w := range ws {
		if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
			return r, err
		}
	}
	for i, w := range ws {
		wt, hd, fin, err := w.report(i)
		if err != nil {
			return r, err
		}
		r.waits = append(r.waits, wt...)
		r.holds = append(r.holds, hd...)
		r.finish = append(r.finish, fin)
	}
	r.elapsed = time.Since(start)
	r.kept, r.size, err = ledgerKept(ctx, dir)
	return r, err
}

// ledgerProc is one writer process of benchLedger, its stdin and its
// stdout by lines.
type ledgerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startLedgerWriter starts writer i of benchLedger on dir and waits for
// its "ready"; out of line (inLine false) it runs with
// HERMES_LEDGER_QUEUE=off. w is not nil once the process started, even
// with an error: the caller then closes its stdin and waits for it.
func startLedgerWriter(ctx context.Context, dir string, i int, inLine bool) (w *ledgerProc, err error) {
	var env []string
	if !inLine {
		env = []string{ledger.EnvQueue + "=off"}
	}
	cmd, stdin, stdout, err := startPiped(ctx, "ledger-writer", env, dir, strconv.Itoa(i), strconv.Itoa(ledgerSpawns))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	w = &ledgerProc{cmd: cmd, stdin: stdin, out: sc}
	if !sc.Scan() || sc.Text() != "ready" {
		return w, fmt.Errorf("ledger writer %d did not start: %q", i, sc.Text())
	}
	return w, nil
}

// report reads writer i's report, one "WAIT/HOLD" pair of nanoseconds per
// Add, then its "done NS": the lock wait of each Add and the rest of it,
// and the writer's time from "go" to its last Add done.
func (w *ledgerProc) report(i int) (waits, holds []time.Duration, finish time.Duration, err error) {
	if !w.out.Scan() {
		return nil, nil, 0, fmt.Errorf("ledger writer %d: no report", i)
	}
	line := w.out.Text()
	if rest, ok := strings.CutPrefix(line, "error: "); ok {
		return nil, nil, 0, fmt.Errorf("ledger writer %d: %s", i, rest)
	}
	for _, f := range strings.Fields(line) {
		wait, hold, _ := strings.Cut(f, "/")
		wns, err1 := strconv.ParseInt(wait, 10, 64)
		hns, err2 := strconv.ParseInt(hold, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, nil, 0, fmt.Errorf("ledger writer %d: bad report %q", i, line)
		}
		waits = append(waits, time.Duration(wns))
		holds = append(holds, time.Duration(hns))
	}
	if !w.out.Scan() {
		return nil, nil, 0, fmt.Errorf("ledger writer %d: no done", i)
	}
	rest, ok := strings.CutPrefix(w.out.Text(), "done ")
	fns, err := strconv.ParseInt(rest, 10, 64)
	if !ok || err != nil {
		return nil, nil, 0, fmt.Errorf("ledger writer %d: %q, want done NS", i, w.out.Text())
	}
	return waits, holds, time.Duration(fns), nil
}

// ledgerKept opens the ledger of dir and returns how many distinct units
// it holds, and its file's size in bytes (0 when it cannot be read).
func ledgerKept(ctx context.Context, dir string) (kept, size int, err error) {
	l, err := ledger.Open(dir)
	if err != nil {
		return 0, 0, err
	}
	entries, err := l.Entries(ctx)
	if err != nil {
		return 0, 0, err
	}
	units := map[string]bool{}
	for _, e := range entries {
		units[e.Unit] = true
	}
	if fi, err := os.Stat(l.Path()); err == nil {
		size = int(fi.Size())
	}
	return len(units), size, nil
}

// ledgerRows are the rows of the run in line: kept of the entries written,
// the file of size bytes after elapsed, and the lock waits and holds of
// every Add.
func ledgerRows(r ledgerRun) []Row {
	kept, size, elapsed, waits, holds := r.kept, r.size, r.elapsed, r.waits, r.holds
	slices.Sort(waits)
	slices.Sort(holds)
	want := ledgerWriters * ledgerSpawns
	method := fmt.Sprintf("%d writer processes (bench re-executed), released together, each %d × Add of one entry led by itself (alive until counted, so pruning keeps it)", ledgerWriters, ledgerSpawns)
	return []Row{
		{
			Figure: fmt.Sprintf("ledger contention, %d procs × %d spawns: entries kept", ledgerWriters, ledgerSpawns),
			Value:  fmt.Sprintf("%d/%d (%s)", kept, want, atLeast(float64(kept), float64(want), " entries")),
			Method: method + fmt.Sprintf("; distinct units in ledger.json after all writers reported; %v in all, file %d KB", elapsed.Round(time.Millisecond), size/1024),
		},
		{
			Figure: "ledger contention: lock wait",
			Value:  fmt.Sprintf("p50 %s, p99 %s (%s), max %s", ledgerMS(ledgerPct(waits, 50)), ledgerMS(ledgerPct(waits, 99)), atMostDur(ledgerPct(waits, 99), 50*time.Millisecond), ledgerMS(ledgerPct(waits, 100))),
			Method: fmt.Sprintf("%d Adds; from the first flock attempt to holding the lock (Ledger.LastLockWait), under the same contention; the rest of each Add (read, prune, encode, write, fsync, rename, with the lock held) p50 %s, p99 %s", len(waits), ledgerMS(ledgerPct(holds, 50)), ledgerMS(ledgerPct(holds, 99))),
		},
	}
}

// ledgerFairRows compare the run in line with the run out of it: the lock
// wait per Add (its median and worst), and the spread of the writers'
// completion times (from "go" to their last Add). A fair lock hands it
// round: every writer finishes near the end, the spread is small and no
// Add waits much longer than the others. An unfair one lets a writer keep
// it: some finish early, others wait for many holds in a row.
func ledgerFairRows(line, off ledgerRun) []Row {
	for _, r := range []*ledgerRun{&line, &off} {
		slices.Sort(r.waits)
		slices.Sort(r.finish)
	}
	spread := func(r ledgerRun) time.Duration { return r.finish[len(r.finish)-1] - r.finish[0] }
	describe := func(r ledgerRun) string {
		return fmt.Sprintf("wait p50 %s, p99 %s, max %s; writers done %s to %s (spread %s)",
			ledgerMS(ledgerPct(r.waits, 50)), ledgerMS(ledgerPct(r.waits, 99)), ledgerMS(ledgerPct(r.waits, 100)),
			ledgerMS(r.finish[0]), ledgerMS(r.finish[len(r.finish)-1]), ledgerMS(spread(r)))
	}
	var verdict string
	lineMax, offMax := ledgerPct(line.waits, 100), ledgerPct(off.waits, 100)
	switch {
	case lineMax < offMax && spread(line) < spread(off):
		verdict = fmt.Sprintf("fairer in line: worst wait %.1f× and spread %.1f× shorter", float64(offMax)/float64(max(lineMax, 1)), float64(spread(off))/float64(max(spread(line), 1)))
	case lineMax > offMax && spread(line) > spread(off):
		verdict = fmt.Sprintf("fairer out of line: worst wait %.1f× and spread %.1f× shorter", float64(lineMax)/float64(max(offMax, 1)), float64(spread(line))/float64(max(spread(off), 1)))
	default:
		verdict = "neither fairer on both counts"
	}
	note := ""
	if runtime.GOOS != "linux" {
		note = "; no line on " + runtime.GOOS + ": both runs take the flock alone"
	}
	method := fmt.Sprintf("the contention above run again in the same bench run on a fresh directory, every writer with %s=off (the flock alone, the darwin and FreeBSD path); kept %d/%d, %v in all, against %v in line; lock wait as above%s",
		ledger.EnvQueue, off.kept, ledgerWriters*ledgerSpawns, off.elapsed.Round(time.Millisecond), line.elapsed.Round(time.Millisecond), note)
	return []Row{
		{
			Figure: "ledger contention without the line: lock wait, completion",
			Value:  describe(off),
			Method: method,
		},
		{
			Figure: "ledger contention: line against no line",
			Value:  verdict,
			Method: fmt.Sprintf("in line: %s; out of line: %s; fairer means a shorter worst lock wait per Add and a smaller spread of the %d writers' times from go to their last Add", describe(line), describe(off), ledgerWriters),
		},
	}
}

// ledgerWriter plays one writer of benchLedger: args dir, index, count.
func ledgerWriter(args []string) int {
	fail := func(err error) int {
		fmt.Println("error:", err)
		return 1
	}
	if len(args) != 3 {
		return fail(errors.New("usage: ledger-writer DIR INDEX COUNT"))
	}
	dir, idx := args[0], args[1]
	n, err := strconv.Atoi(args[2])
	if err != nil {
		return fail(err)
	}
	l, err := ledger.Open(dir)
	if err != nil {
		return fail(err)
	}
	self, err := proc.Self()
	if err != nil {
		return fail(err)
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return fail(err)
	}
	ctx := context.Background()
	start := time.Now()
	waits := make([]string, 0, n)
	for i := range n {
		e := ledger.Entry{
			Unit:      fmt.Sprintf("bench-%s-%d", idx, i),
			Leader:    self,
			PGID:      syscall.Getpgrp(),
			Argv:      []string{"node", "server.js", "--port", strconv.Itoa(3000 + i)},
			Owner:     self,
			Role:      units.RoleGateway,
			Ownership: units.Owned,
			Log:       fmt.Sprintf("%s/logs/bench-%s-%d.log", dir, idx, i),
			Spawned:   time.Now(),
			Spawn:     ledger.NewSpawnKey(),
		}
		t0 := time.Now()
		if err := l.Add(ctx, e); err != nil {
			return fail(err)
		}
		took := time.Since(t0)
		wait := l.LastLockWait()
		waits = append(waits, strconv.FormatInt(int64(wait), 10)+"/"+strconv.FormatInt(int64(took-wait), 10))
	}
	fmt.Println(strings.Join(waits, " "))
	fmt.Println("done", int64(time.Since(start)))
	_, _ = io.Copy(io.Discard, in) // stay alive until the parent has counted
	return 0
}

// ledgerPct returns the p-th percentile (nearest rank) of sorted ds.
func ledgerPct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (p*len(ds) + 99) / 100
	return ds[min(max(i-1, 0), len(ds)-1)]
}

func ledgerMS(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
