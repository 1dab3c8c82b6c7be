// Command bench measures the project's speed and memory targets and prints
// one table: figure, value, method, with the machine in the heading.
//
// Figures are medians and percentiles over repeated trials, measured in one
// run so that ratios compare like with like. Timed assertions live nowhere
// else: tests check behaviour, this program checks speed.
//
// Each section is a function in its own file; it returns its rows. The bench
// binary re-executes itself with "-child NAME" to play the processes a
// section needs (see child.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Row is one line of the table.
type Row struct {
	Figure string // what is measured
	Value  string // the figure, with its unit, and the target when there is one
	Method string // how: trials, percentile, what starts and stops the clock
}

type section struct {
	name string
	run  func(ctx context.Context) ([]Row, error)
}

// sections run in this order; -only selects some by name.
var sections = []section{
	{"ledger", benchLedger},
	{"supervisor", benchSupervisor},
	hermesdSection("hermesd", benchHermesd),
	hermesdSection("owner", benchOwner),
	tempSection("load", benchLoad),
	{"proxy", benchProxy},
	hermesdSection("scrape", benchScrape),
	tempSection("scale", benchScale),
	tempSection("storm", benchStorm),
}

// tempSection is the section name whose run works in a fresh temporary
// directory, removed once run returns.
func tempSection(name string, run func(ctx context.Context, dir string) ([]Row, error)) section {
	return section{name, func(ctx context.Context) ([]Row, error) {
		dir, err := os.MkdirTemp("", "hermes-bench-"+name+"-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		return run(ctx, dir)
	}}
}

// hermesdSection is tempSection for a section that measures hermesd: run
// also gets the binary hermesdBinary gives (built into dir).
func hermesdSection(name string, run func(ctx context.Context, dir, bin string) ([]Row, error)) section {
	return tempSection(name, func(ctx context.Context, dir string) ([]Row, error) {
		bin, err := hermesdBinary(ctx, dir)
		if err != nil {
			return nil, err
		}
		return run(ctx, dir, bin)
	})
}

func main() {
	child := flag.String("child", "", "internal: play the named helper process")
	only := flag.String("only", "", "comma-separated section names to run (default all)")
	flag.Parse()
	if *child != "" {
		os.Exit(runChild(*child, flag.Args()))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, only string) error {
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	fmt.Printf("machine: %s, %d cores, %s/%s, %s\n\n", hostModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tmethod")
	fmt.Fprintln(tw, "------\t-----\t------")
	var failed []string
	list := sections
	if *peersOnly {
		list = []section{tempSection("peers", benchPeers)}
	}
	for _, s := range list {
		if len(want) > 0 && !want[s.name] {
			continue
		}
		rows, err := s.run(ctx)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", s.name, err))
		}
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Figure, r.Value, r.Method)
		}
		tw.Flush()
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d section(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// hostModel names the CPU from /proc/cpuinfo.
func hostModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown cpu"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown cpu"
}

// Targets. Every row with a target says whether this run met it, and by
// how much it missed: a figure is never left to be compared by eye.

// atMostDur is the target note for a duration that should be ≤ limit.
func atMostDur(got, limit time.Duration) string {
	if got <= limit {
		return fmt.Sprintf("target ≤ %v: met", limit)
	}
	return fmt.Sprintf("target ≤ %v: MISSED by %v", limit, roundDur(got-limit))
}

// atMost is the target note for a figure that should be ≤ limit.
func atMost(got, limit float64, unit string) string {
	if got <= limit {
		return fmt.Sprintf("target ≤ %g%s: met", limit, unit)
	}
	return fmt.Sprintf("target ≤ %g%s: MISSED by %.3g%s", limit, unit, got-limit, unit)
}

// atLeast is the target note for a figure that should be ≥ limit.
func atLeast(got, limit float64, unit string) string {
	if got >= limit {
		return fmt.Sprintf("target ≥ %g%s: met", limit, unit)
	}
	return fmt.Sprintf("target ≥ %g%s: MISSED by %.3g%s", limit, unit, limit-got, unit)
}

// roundDur rounds d for display: 0.1 ms below a second, 1 ms above.
func roundDur(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// tail names the high percentile a set of trials supports: p99 needs at
// least 100 trials; with fewer, the worst trial is reported and called max.
func tail(ds []time.Duration) (string, time.Duration) {
	if len(ds) >= 100 {
		return "p99", percentile(ds, 0.99)
	}
	return "max", percentile(ds, 1)
}

// procKB reads /proc/PID/FILE, whose lines are "Key: N" or "Key: N kB"
// (status, smaps_rollup), and returns the number of each key; a line whose
// value is no number is left out.
func procKB(pid int, file string) (map[string]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return nil, err
	}
	m := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err == nil {
			m[k] = n
		}
	}
	return m, nil
}

// procValue is the number of key in /proc/PID/FILE (procKB); a file
// without it is an error.
func procValue(pid int, file, key string) (int, error) {
	m, err := procKB(pid, file)
	if err != nil {
		return 0, err
	}
	n, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("no %s in /proc/%d/%s", key, pid, file)
	}
	return n, nil
}
