// Command chaos is the chaos harness of hermesd (make chaos): it runs a
// chaos build of hermesd (go build -tags chaos) on a mixed unit set in
// temporary directories and, over many rounds with a seeded random
// schedule, kills it at random moments (during reload storms, right after a
// unit's restart, during ledger writes, during a clean stop) by SIGKILL,
// SIGTERM, an injected panic, SIGKILL of hermesd together with its death
// supervisor (the owned units then live on, and the next hermesd must end
// them before starting its own copies), SIGKILL after its death supervisor
// was stopped (SIGSTOP: hermesd must go on answering and say so, see
// supstop.go), or the OOM killer where the cgroup v2 memory controller is
// available; then it starts hermesd again on the
// same state directory. After every death and every restart it checks the promise of
// SPEC §3, §4, §6: no owned process outlives the supervisor's grace, every
// survivor (adoptable, persist_on_release) lives on and is re-adopted
// exactly once with the same pid, no unit ever has two live groups, and the
// ledger parses and records every live spawn.
//
// Usage:
//
//	go run ./tools/chaos -rounds 200 -seed 1
//
// It prints the rounds run, the faults by kind (and those unavailable here,
// with the reason), and every violation (round, moment, fault, what was
// wrong), and exits 1 if there was any. At the end it stops everything it
// started, survivors included, and removes its directories and cgroups.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	rounds := flag.Int("rounds", 200, "rounds to play (each kills and restarts hermesd once)")
	seed := flag.Int64("seed", 0, "seed of the random schedule (0: from the clock; printed either way)")
	verbose := flag.Bool("v", false, "print each round")
	keep := flag.Bool("keep", false, "keep the temporary directory (hermesd's log, state) at the end")
	flag.Parse()
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(play(ctx, *rounds, *seed, *verbose, *keep))
}

// play runs the harness and returns the exit code.
func play(ctx context.Context, rounds int, seed int64, verbose, keep bool) int {
	h, err := newHarness(ctx, seed, verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		if h != nil {
			h.cleanup(keep)
		}
		return 2
	}
	began := time.Now()
	fmt.Printf("chaos: seed %d, %d rounds, hermesd in %s mode, units: %s\n", seed, rounds, h.mode, allNames())
	code := 0
	if err := h.loop(ctx, rounds); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: stopped early:", err)
		code = 2
	}
	h.summary(os.Stdout, time.Since(began))
	if len(h.violations) > 0 && code == 0 {
		code = 1
	}
	if err := h.cleanup(keep || code != 0); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: cleanup:", err)
	}
	return code
}

// violation is one broken promise.
type violation struct {
	round         int
	moment, fault string
	what          string
}

// harness is one run. It is used by one goroutine (play's), except where a
// round's activity runs beside it (see act).
type harness struct {
	run                                 string // the run's tag value (envRun)
	dir, units, state, socket, log, bin string
	mode                                string // cgroup | pgroup (hermesd's, from its status)
	cg                                  *cgroup
	cgWhy                               string // why there is no harness cgroup
	sched                               *schedule
	verbose                             bool

	d          *daemon
	round      int
	gens       map[string]int // generation written in each unit file
	faults     map[string]int // by kind, delivered
	moments    map[string]int
	violations []violation
	cur        struct{ moment, fault string }
	supKilled  bool // the last faultBoth killed a supervisor with hermesd
}

func newHarness(ctx context.Context, seed int64, verbose bool) (*harness, error) {
	dir, err := os.MkdirTemp("", "hermes-chaos-")
	if err != nil {
		return nil, err
	}
	h := &harness{
		run: strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(seed, 10), dir: dir,
		units: filepath.Join(dir, "units"), state: filepath.Join(dir, "state"),
		socket: filepath.Join(dir, "state", "ctl.sock"), log: filepath.Join(dir, "hermesd.log"),
		sched: newSchedule(seed), verbose: verbose,
		gens: map[string]int{}, faults: map[string]int{}, moments: map[string]int{},
	}
	if err := os.MkdirAll(h.units, 0o700); err != nil {
		return h, err
	}
	for _, d := range unitSet {
		if err := writeUnit(h.units, d, 0, true); err != nil {
			return h, err
		}
	}
	if h.cg, err = newCgroup("hermes-chaos-" + strconv.Itoa(os.Getpid())); err != nil {
		h.cgWhy = err.Error()
	}
	if h.bin, err = build(ctx, dir); err != nil {
		return h, err
	}
	if h.d, err = h.start(ctx); err != nil {
		return h, err
	}
	st, err := h.status(ctx)
	if err != nil {
		return h, err
	}
	h.mode = string(st.Supervisor.Mode)
	return h, nil
}

// loop plays the rounds. It returns an error only when the harness cannot
// go on (hermesd does not start again, ctx ended).
func (h *harness) loop(ctx context.Context, rounds int) error {
	for range rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := h.playRound(ctx); err != nil {
			return err
		}
	}
	return nil
}

// violate records a violation of the current round.
func (h *harness) violate(format string, args ...any) {
	v := violation{round: h.round, moment: h.cur.moment, fault: h.cur.fault, what: fmt.Sprintf(format, args...)}
	h.violations = append(h.violations, v)
	fmt.Printf("VIOLATION round %d (%s, %s): %s\n", v.round, v.moment, v.fault, v.what)
}

func (h *harness) summary(w *os.File, took time.Duration) {
	fmt.Fprintf(w, "\nchaos summary (seed %d, hermesd %s mode, %s)\n", h.sched.seed, h.mode, took.Round(time.Second))
	fmt.Fprintf(w, "  rounds run:  %d\n", h.round)
	fmt.Fprintf(w, "  faults:      %s\n", counts(h.faults))
	fmt.Fprintf(w, "  moments:     %s\n", counts(h.moments))
	if h.cg == nil {
		fmt.Fprintf(w, "  unavailable: oom (no harness cgroup: %s)\n", h.cgWhy)
	} else if h.cg.oom != "" {
		fmt.Fprintf(w, "  unavailable: oom (%s)\n", h.cg.oom)
	}
	fmt.Fprintf(w, "  violations:  %d\n", len(h.violations))
	for _, v := range h.violations {
		fmt.Fprintf(w, "    round %d (%s, %s): %s\n", v.round, v.moment, v.fault, v.what)
	}
}

func counts(m map[string]int) string {
	ks := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "%s %d  ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// cleanup stops hermesd and everything the run started (survivors
// included), removes the run's cgroups and, unless keep, its directory.
func (h *harness) cleanup(keep bool) error {
	if h.d != nil && h.d.alive() {
		h.d.cmd.Process.Signal(syscall.SIGTERM)
		if !h.d.exited(20 * time.Second) {
			h.d.cmd.Process.Kill()
			<-h.d.done
		}
	}
	// The supervisor of a killed hermesd may still be in its grace: kill
	// every tagged process until none is left.
	deadline := time.Now().Add(10 * time.Second)
	for ps := scan(h.run); len(ps) > 0 && time.Now().Before(deadline); ps = scan(h.run) {
		killAll(ps)
		time.Sleep(20 * time.Millisecond)
	}
	var err error
	if h.cg != nil {
		err = h.cg.remove()
	}
	if keep {
		fmt.Printf("chaos: kept %s (hermesd.log, state/)\n", h.dir)
	} else if rerr := os.RemoveAll(h.dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}
