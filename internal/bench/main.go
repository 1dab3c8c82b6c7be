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
	"strings"
	"syscall"
	"text/tabwriter"
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
	{"hermesd", benchHermesd},
	{"load", benchLoad},
	{"proxy", benchProxy},
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
	for _, s := range sections {
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
