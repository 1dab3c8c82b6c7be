package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
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

// benchLedger starts ledgerWriters processes on one fresh state directory.
// Each says "ready", waits for "go", adds ledgerSpawns entries one Add at a
// time (each led by the writer itself, so that pruning keeps them while it
// lives), prints the lock wait of each Add in nanoseconds and "done", then
// stays alive until its stdin closes. The parent counts the entries before
// closing the pipes.
func benchLedger(ctx context.Context) ([]Row, error) {
	dir, err := os.MkdirTemp("", "hermes-bench-ledger-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	type writer struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var ws []*writer
	defer func() {
		for _, w := range ws {
			w.stdin.Close()
			_ = w.cmd.Wait()
		}
	}()
	for i := range ledgerWriters {
		cmd := exec.CommandContext(ctx, exe, "-child", "ledger-writer", dir, strconv.Itoa(i), strconv.Itoa(ledgerSpawns))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		w := &writer{cmd: cmd, stdin: stdin, out: sc}
		ws = append(ws, w)
		if !sc.Scan() || sc.Text() != "ready" {
			return nil, fmt.Errorf("ledger writer %d did not start: %q", i, sc.Text())
		}
	}
	start := time.Now()
	for _, w := range ws {
		if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
			return nil, err
		}
	}
	var waits, holds []time.Duration
	for i, w := range ws {
		if !w.out.Scan() {
			return nil, fmt.Errorf("ledger writer %d: no report", i)
		}
		line := w.out.Text()
		if rest, ok := strings.CutPrefix(line, "error: "); ok {
			return nil, fmt.Errorf("ledger writer %d: %s", i, rest)
		}
		for _, f := range strings.Fields(line) {
			w, h, _ := strings.Cut(f, "/")
			wns, err1 := strconv.ParseInt(w, 10, 64)
			hns, err2 := strconv.ParseInt(h, 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("ledger writer %d: bad report %q", i, line)
			}
			waits = append(waits, time.Duration(wns))
			holds = append(holds, time.Duration(hns))
		}
		if !w.out.Scan() || w.out.Text() != "done" {
			return nil, fmt.Errorf("ledger writer %d: %q, want done", i, w.out.Text())
		}
	}
	elapsed := time.Since(start)
	l, err := ledger.Open(dir)
	if err != nil {
		return nil, err
	}
	entries, err := l.Entries(ctx)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, e := range entries {
		kept[e.Unit] = true
	}
	size := 0
	if fi, err := os.Stat(l.Path()); err == nil {
		size = int(fi.Size())
	}
	slices.Sort(waits)
	slices.Sort(holds)
	want := ledgerWriters * ledgerSpawns
	method := fmt.Sprintf("%d writer processes (bench re-executed), released together, each %d × Add of one entry led by itself (alive until counted, so pruning keeps it)", ledgerWriters, ledgerSpawns)
	rows := []Row{
		{
			Figure: fmt.Sprintf("ledger contention, %d procs × %d spawns: entries kept", ledgerWriters, ledgerSpawns),
			Value:  fmt.Sprintf("%d/%d (%s)", len(kept), want, atLeast(float64(len(kept)), float64(want), " entries")),
			Method: method + fmt.Sprintf("; distinct units in ledger.json after all writers reported; %v in all, file %d KB", elapsed.Round(time.Millisecond), size/1024),
		},
		{
			Figure: "ledger contention: lock wait",
			Value:  fmt.Sprintf("p50 %s, p99 %s (%s), max %s", ledgerMS(ledgerPct(waits, 50)), ledgerMS(ledgerPct(waits, 99)), atMostDur(ledgerPct(waits, 99), 50*time.Millisecond), ledgerMS(ledgerPct(waits, 100))),
			Method: fmt.Sprintf("%d Adds; from the first flock attempt to holding the lock (Ledger.LastLockWait), under the same contention; the rest of each Add (read, prune, encode, write, fsync, rename, with the lock held) p50 %s, p99 %s", len(waits), ledgerMS(ledgerPct(holds, 50)), ledgerMS(ledgerPct(holds, 99))),
		},
	}
	if len(kept) != want {
		return rows, fmt.Errorf("ledger kept %d of %d entries", len(kept), want)
	}
	return rows, nil
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
	waits := make([]string, 0, n)
	for i := range n {
		e := ledger.Entry{
			Unit:      fmt.Sprintf("bench-%s-%d", idx, i),
			Leader:    self,
			PGID:      syscall.Getpgrp(),
			Argv:      []string{"node", "server.js", "--port", strconv.Itoa(3000 + i)},
			Owner:     self,
			Role:      "gateway",
			Ownership: "owned",
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
	fmt.Println("done")
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
