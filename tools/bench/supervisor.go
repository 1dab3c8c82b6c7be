package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

func init() {
	children["sup-owner"] = supOwnerChild
}

// supOwnerChild is an owner: args N KIND MODE GRACE_MS. It spawns N groups
// (KIND "term": sleep; "ignore": sleep with TERM ignored), prints one line
// "PGID CGROUP" per group, then "ready", and waits for stdin EOF.
func supOwnerChild(args []string) int {
	n, _ := strconv.Atoi(args[0])
	graceMS, _ := strconv.Atoi(args[3])
	o, err := supervisor.New(supervisor.Options{Role: units.RoleWorker, Mode: supervisor.Mode(args[2]), Grace: time.Duration(graceMS) * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	argv := []string{"sleep", "100000"}
	if args[1] == "ignore" {
		argv = []string{"sh", "-c", `trap "" TERM; exec sleep 100000`}
	}
	for i := range n {
		c, err := o.SpawnOwned(context.Background(), supervisor.Spec{Unit: fmt.Sprintf("b%d", i), Argv: argv, Env: os.Environ()})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cg := c.Cgroup
		if cg == "" {
			cg = "-"
		}
		fmt.Printf("%d %s\n", c.PGID, cg)
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	o.Close()
	return 0
}

type benchGroup struct {
	pgid   int
	cgroup string
}

func (g benchGroup) empty() bool {
	if g.cgroup != "" {
		b, err := os.ReadFile(filepath.Join(g.cgroup, "cgroup.events"))
		return err != nil || strings.Contains(string(b), "populated 0")
	}
	return errors.Is(syscall.Kill(-g.pgid, 0), syscall.ESRCH)
}

// ownerDeath starts an owner with n groups, SIGKILLs it, and returns the
// time from the kill to every group being empty (polled every 200 µs).
func ownerDeath(ctx context.Context, n int, kind string, mode supervisor.Mode, grace time.Duration) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, self, "-child", "sup-owner", strconv.Itoa(n), kind, string(mode), strconv.FormatInt(grace.Milliseconds(), 10))
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer in.Close()
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var groups []benchGroup
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		pgid, _ := strconv.Atoi(f[0])
		g := benchGroup{pgid: pgid}
		if f[1] != "-" {
			g.cgroup = f[1]
		}
		groups = append(groups, g)
	}
	if len(groups) != n {
		return 0, fmt.Errorf("owner started %d of %d groups", len(groups), n)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	deadline := start.Add(grace + 10*time.Second)
	for i := 0; i < len(groups); {
		if groups[i].empty() {
			i++
			continue
		}
		if time.Now().After(deadline) {
			for _, g := range groups {
				syscall.Kill(-g.pgid, syscall.SIGKILL)
			}
			return 0, fmt.Errorf("%d groups still alive %v after the owner's death", len(groups)-i, time.Since(start))
		}
		time.Sleep(200 * time.Microsecond)
	}
	return time.Since(start), nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func benchSupervisor(ctx context.Context) ([]Row, error) {
	mode := supervisor.ModePGroup
	if o, err := supervisor.New(supervisor.Options{}); err == nil {
		mode = o.Mode()
		o.Close()
	}
	var rows []Row
	// The TERM-obeying owner-death rows are the owner section's, on a real
	// hermesd; this row is the grace path, which only a bench owner can
	// play cheaply.
	const trials = 10
	grace := 500 * time.Millisecond
	var ds []time.Duration
	for range trials {
		d, err := ownerDeath(ctx, 100, "ignore", mode, grace)
		if err != nil {
			return rows, err
		}
		ds = append(ds, d)
	}
	tn, tv := tail(ds)
	rows = append(rows, Row{
		Figure: "owner SIGKILL → 100 TERM-ignoring groups empty",
		Value:  fmt.Sprintf("median %v, %s %v (%s, on the %s)", roundDur(percentile(ds, 0.5)), tn, roundDur(tv), atMostDur(tv, grace+100*time.Millisecond), tn),
		Method: fmt.Sprintf("%s mode, grace %v, %d trials; an owner process of the bench's with one `sh` ignoring TERM per group; clock from kill(2) of the owner to every group empty (cgroup.events populated 0 / kill(-pgid,0)=ESRCH, polled every 200 µs)", mode, grace, trials),
	})
	mem, err := idleMemory(ctx, mode)
	if err != nil {
		return rows, err
	}
	rows = append(rows, mem)
	rate, err := spawnRate(ctx, mode, 1)
	if err != nil {
		return rows, err
	}
	rows = append(rows, Row{Figure: "spawns per second through SpawnOwned", Value: fmt.Sprintf("%.0f/s (%s)", rate, atLeast(rate, 1000, "/s")),
		Method: fmt.Sprintf("%s mode, 300 spawns of sleep in one owner, one after another, registration and ledger write (lock, fsync, rename) included", mode)})
	// Not the target's figure (that one is sequential): how far spawns
	// from several goroutines of one owner overlap.
	const workers = 4
	crate, err := spawnRate(ctx, mode, workers)
	if err != nil {
		return rows, err
	}
	rows = append(rows, Row{Figure: fmt.Sprintf("spawns per second through SpawnOwned, %d goroutines", workers), Value: fmt.Sprintf("%.0f/s (no target: the target is the sequential row's)", crate),
		Method: fmt.Sprintf("%s mode, 300 spawns of sleep in one owner, %d goroutines spawning at once, registration and ledger write included", mode, workers)})
	return rows, nil
}

// memSample is the memory of one process by three measures (kB): RSS
// counts every page it maps, PSS shares each page among the processes
// mapping it (so it moves with whatever else maps the same libraries),
// USS counts only its private pages (what its exit would free).
type memSample struct{ rss, pss, uss int }

func readMem(pid int) (memSample, error) {
	kb, err := procKB(pid, "smaps_rollup")
	m := memSample{rss: kb["Rss"], pss: kb["Pss"], uss: kb["Private_Clean"] + kb["Private_Dirty"]}
	if err == nil && m.rss == 0 {
		err = fmt.Errorf("no Rss in /proc/%d/smaps_rollup", pid)
	}
	return m, err
}

// idleMemory reads the supervisor's memory in an owner with 10 groups,
// beside a bare `sh` waiting on a pipe, read at the same moment.
func idleMemory(ctx context.Context, mode supervisor.Mode) (Row, error) {
	o, err := supervisor.New(supervisor.Options{Mode: mode})
	if err != nil {
		return Row{}, err
	}
	defer o.Close()
	for i := range 10 {
		if _, err := o.SpawnOwned(ctx, supervisor.Spec{Unit: fmt.Sprintf("p%d", i), Argv: []string{"sleep", "100000"}, Env: os.Environ()}); err != nil {
			return Row{}, err
		}
	}
	bare := exec.Command("/bin/sh", "-c", "read -r x")
	in, err := bare.StdinPipe()
	if err != nil {
		return Row{}, err
	}
	if err := bare.Start(); err != nil {
		return Row{}, err
	}
	defer func() { in.Close(); bare.Wait() }()
	time.Sleep(200 * time.Millisecond) // let the supervisor drain the pipe and settle
	sup, err := readMem(o.Status().PID)
	if err != nil {
		return Row{}, err
	}
	sh, err := readMem(bare.Process.Pid)
	if err != nil {
		return Row{}, err
	}
	mb := func(kb int) string { return fmt.Sprintf("%.2f MB", float64(kb)/1024) }
	return Row{
		Figure: "supervisor idle memory (RSS / PSS / USS)",
		Value: fmt.Sprintf("supervisor %s / %s / %s; bare sh %s / %s / %s (PSS %s)", mb(sup.rss), mb(sup.pss), mb(sup.uss), mb(sh.rss), mb(sh.pss), mb(sh.uss),
			atMost(float64(sup.pss)/1024, 0.5, " MB")),
		Method: "/proc/PID/smaps_rollup (Rss; Pss; USS = Private_Clean+Private_Dirty) of the /bin/sh supervisor with 10 groups registered, 200 ms after the last registration, and of a `/bin/sh -c 'read -r x'` started beside it and read at the same moment: the supervisor's cost is its excess over the bare shell",
	}, nil
}

// spawnRate measures SpawnOwned throughput with the ledger on: 300 spawns
// shared by workers goroutines.
func spawnRate(ctx context.Context, mode supervisor.Mode, workers int) (float64, error) {
	dir, err := os.MkdirTemp("", "hermes-bench")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	o, err := supervisor.New(supervisor.Options{Mode: mode, StateDir: dir, Role: units.RoleWorker, Grace: 500 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	defer o.Close()
	const n = 300
	env := os.Environ()
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		go func() {
			for i := w; i < n; i += workers {
				if _, err := o.SpawnOwned(ctx, supervisor.Spec{Unit: fmt.Sprintf("r%d", i), Argv: []string{"sleep", "100000"}, Env: env}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return 0, first
	}
	return n / time.Since(start).Seconds(), nil
}
