package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/proc"
)

// The hermesd section runs the real daemon as a process, on its own temp
// units and state directories, with hermesdUnits owned sleep units.
const (
	hermesdUnits       = 100
	hermesdColdTrials  = 9
	hermesdIdle        = forceGCPeriod*3/2 + 10*time.Second // see forceGCPeriod
	hermesdSettle      = 5 * time.Second                    // after all ready, before the idle window
	hermesdEdits       = 100
	hermesdEditPause   = 50 * time.Millisecond // between two reload edits
	hermesdStopTimeout = 30 * time.Second
	clkTck             = 100 // USER_HZ: the unit of utime/stime in /proc/PID/stat on Linux
)

// forceGCPeriod is the Go runtime's forcegcperiod: a Go process that has
// not collected for this long is made to, idle or not (runtime/proc.go).
// An idle process's sysmon looks every forceGCPeriod/2, so the forced
// collection comes 2 to 3 minutes after the last one. The idle window is
// longer than 3 minutes: every Go process it samples collects at least
// once in it, and those wake-ups are counted.
const forceGCPeriod = 2 * time.Minute

// envHermesd names a hermesd binary to measure instead of building one;
// envHermesctl a hermesctl (so that a before and an after of a change are
// measured by the bench of one tree).
const (
	envHermesd   = "HERMES_BENCH_HERMESD"
	envHermesctl = "HERMES_BENCH_HERMESCTL"
)

func init() {
	children["idle-go"] = idleGoChild
}

// idleGoChild is a Go program that does nothing until TERM: the baseline of
// the Go runtime's own wake-ups, measured in the same window as hermesd.
func idleGoChild([]string) int {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	fmt.Println("ready")
	<-c
	return 0
}

func benchHermesd(ctx context.Context, tmp, bin string) ([]Row, error) {
	var rows []Row

	// Cold start, and the clean stop after it, over fresh state
	// directories, in the automatic mode (cgroup where a writable
	// hierarchy exists), then in pgroup mode if that was cgroup.
	cold, err := coldTrials(ctx, bin, tmp, "")
	if err != nil {
		return rows, err
	}
	rows = append(rows,
		Row{Figure: fmt.Sprintf("hermesd cold start, %d units → all running and ready (%s mode)", hermesdUnits, cold.mode),
			Value:  fmt.Sprintf("median %v, max %v", roundDur(percentile(cold.starts, 0.5)), roundDur(percentile(cold.starts, 1))),
			Method: fmt.Sprintf("%d trials, fresh state dir each; clock from starting the hermesd process to the first status over the control socket (polled every 5 ms) with all %d units running and ready (owned `sleep`, no probe)", hermesdColdTrials, hermesdUnits)},
		cold.stopRow())
	if cold.mode != "pgroup" {
		pg, err := coldTrials(ctx, bin, tmp, "pgroup")
		if err != nil {
			return rows, err
		}
		rows = append(rows, pg.stopRow())
	}

	// One daemon for the idle window and the reload edits, and one with
	// metrics on beside it for the idle window.
	d, err := startBenchDaemon(ctx, bin, filepath.Join(tmp, "steady"), sleepUnit, "")
	if err != nil {
		return rows, err
	}
	defer d.stop()
	m, err := startBenchDaemon(ctx, bin, filepath.Join(tmp, "metrics"), sleepUnit, metricsConfig)
	if err != nil {
		return rows, err
	}
	defer m.stop()
	for _, x := range []*benchDaemon{d, m} {
		if _, err := x.waitAllReady(ctx); err != nil {
			return rows, err
		}
	}
	idle, err := d.measureIdle(ctx, m)
	if err != nil {
		return rows, err
	}
	rows = append(rows, idle...)
	if _, err := m.stop(); err != nil {
		return rows, err
	}
	reload, err := d.measureReload(ctx)
	if err != nil {
		return rows, err
	}
	rows = append(rows, reload)
	if _, err := d.stop(); err != nil {
		return rows, err
	}
	return rows, nil
}

// coldRun is what coldTrials measured in one supervisor mode.
type coldRun struct {
	mode                        string // the mode hermesd reported (status), e.g. cgroup
	starts, gone, exits, floors []time.Duration
}

// coldTrials starts hermesdColdTrials daemons on fresh state directories
// under tmp, with --supervisor-mode mode ("" for the automatic choice),
// each until all its units are ready, and stops each with TERM, the stop
// paired with a floor trial just before it.
func coldTrials(ctx context.Context, bin, tmp, mode string) (coldRun, error) {
	var c coldRun
	var args []string
	if mode != "" {
		args = []string{"--supervisor-mode", mode}
	}
	for i := range hermesdColdTrials {
		d, err := startBenchDaemon(ctx, bin, filepath.Join(tmp, fmt.Sprintf("cold%s%d", mode, i)), sleepUnit, "", args...)
		if err != nil {
			return c, err
		}
		start, err := d.waitAllReady(ctx)
		if err != nil {
			d.stop()
			return c, err
		}
		c.mode = d.mode
		floor, err := stopFloor(hermesdUnits)
		if err != nil {
			d.stop()
			return c, err
		}
		g, exit, err := d.stopMeasured()
		if err != nil {
			return c, err
		}
		c.starts, c.floors = append(c.starts, start), append(c.floors, floor)
		c.gone, c.exits = append(c.gone, g), append(c.exits, exit)
	}
	return c, nil
}

// stopRow is the clean stop's row of c.
func (c coldRun) stopRow() Row {
	medGone, medFloor := percentile(c.gone, 0.5), percentile(c.floors, 0.5)
	ratio := float64(medGone) / float64(medFloor)
	return Row{Figure: fmt.Sprintf("hermesd clean stop, %d TERM-obeying units → every unit process exited (%s mode)", hermesdUnits, c.mode),
		Value: fmt.Sprintf("median %v (%s), max %v; floor median %v, ratio %.2f (%s)", roundDur(medGone), atMostDur(medGone, 15*time.Millisecond), roundDur(percentile(c.gone, 1)),
			roundDur(medFloor), ratio, atMost(ratio, 2, "× floor")),
		Method: fmt.Sprintf("%d trials, fresh state dir each, hermesd in %s mode (status); clock from SIGTERM to hermesd to the last unit process's exit (a pidfd per unit process, opened before, polled with poll(2): the kernel's exit event, no sampling). "+
			"Floor, measured just before each stop: this process sends TERM to %d `sleep` children of its own and waits on their pidfds the same way. hermesd itself exits %v after the TERM (median)", hermesdColdTrials, c.mode, hermesdUnits, roundDur(percentile(c.exits, 0.5)))}
}

// hermesdBinary builds cmd/hermesd into dir, unless envHermesd names a
// binary.
func hermesdBinary(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv(envHermesd); p != "" {
		return p, nil
	}
	return buildCommand(ctx, dir, "hermesd")
}

// hermesctlBinary is the hermesctl to drive hermesd with:
// $HERMES_BENCH_HERMESCTL if set, else one built into dir.
func hermesctlBinary(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv(envHermesctl); p != "" {
		return p, nil
	}
	return buildCommand(ctx, dir, "hermesctl")
}

// buildCommand builds the module's cmd/NAME into dir (the module root is
// found from the working directory) and returns the binary's path.
func buildCommand(ctx context.Context, dir, name string) (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", errors.New("no go.mod above the working directory: run the bench from the repository, or set " + envHermesd)
		}
		root = parent
	}
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = root
	if name == "hermesctl" { // static, as make build and make dist build it
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", name, err, b)
	}
	return out, nil
}

// benchDaemon is one hermesd process with its own directories.
type benchDaemon struct {
	dir, units, socket, log string
	cmd                     *exec.Cmd
	started                 time.Time
	done                    chan error // receives Wait's result once
	stopped                 bool       // stop ran
	pids                    []int      // unit pids last seen in status
	mode                    string     // the supervisor's mode, from the status that found all units ready
	n                       int        // its units
}

// sleepUnit is the unit file of the hermesd section's units.
const sleepUnit = "command: [sleep, \"100000\"]\n"

// startBenchDaemon starts hermesd on dir with hermesdUnits units whose
// file is unit, with args added to its command line and, when config is
// not "", that hermes.yaml (HERMES_* is removed from the environment).
func startBenchDaemon(ctx context.Context, bin, dir, unit, config string, args ...string) (*benchDaemon, error) {
	return startBenchDaemonN(ctx, bin, dir, unit, config, hermesdUnits, args...)
}

// startBenchDaemonN is startBenchDaemon with n units.
func startBenchDaemonN(ctx context.Context, bin, dir, unit, config string, n int, args ...string) (*benchDaemon, error) {
	d := &benchDaemon{dir: dir, units: filepath.Join(dir, "units"), socket: filepath.Join(dir, "state", "ctl.sock"),
		log: filepath.Join(dir, "hermesd.log"), done: make(chan error, 1), n: n}
	if err := os.MkdirAll(d.units, 0o700); err != nil {
		return nil, err
	}
	for i := range n {
		if err := os.WriteFile(d.unitPath(i), []byte(unit), 0o600); err != nil {
			return nil, err
		}
	}
	cfg := filepath.Join(dir, "hermes.yaml") // absent: the defaults
	if config != "" {
		if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
			return nil, err
		}
	}
	logf, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	d.cmd = exec.Command(bin, append([]string{"--units", d.units, "--state", filepath.Join(dir, "state"),
		"--socket", d.socket, "--config", cfg}, args...)...)
	d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = managerEnv(), logf, logf
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.done <- d.cmd.Wait() }()
	return d, nil
}

func (d *benchDaemon) unitPath(i int) string {
	return filepath.Join(d.units, fmt.Sprintf("u%03d.yaml", i))
}

func (d *benchDaemon) fail(err error) error {
	b, _ := os.ReadFile(d.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Errorf("%w\nhermesd log (tail):\n%s", err, b)
}

// status asks hermesd over its control socket.
func (d *benchDaemon) status(ctx context.Context) (control.Status, error) {
	c, err := control.Dial(d.socket)
	if err != nil {
		return control.Status{}, err
	}
	defer c.Close()
	return c.Status(ctx)
}

// waitAllReady polls status until every unit runs and is ready, and returns
// the time since the process started.
func (d *benchDaemon) waitAllReady(ctx context.Context) (time.Duration, error) {
	deadline := time.Now().Add(time.Duration(max(60, d.n/10)) * time.Second)
	for {
		select {
		case err := <-d.done:
			d.done <- err
			return 0, d.fail(fmt.Errorf("hermesd exited during start: %v", err))
		default:
		}
		if st, err := d.status(ctx); err == nil && len(st.Units) == d.n {
			n := 0
			for _, u := range st.Units {
				if u.State == control.StateRunning && u.Ready {
					n++
				}
			}
			if n == d.n {
				took := time.Since(d.started)
				d.mode = string(st.Supervisor.Mode)
				d.pids = d.pids[:0]
				for _, u := range st.Units {
					d.pids = append(d.pids, u.PID)
				}
				return took, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, d.fail(errors.New("not all units running and ready within 60s"))
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends TERM, waits for a clean exit (KILL after hermesdStopTimeout),
// and checks that no unit process of the last status is left. It returns
// the time from TERM to exit; calling it again is a no-op.
func (d *benchDaemon) stop() (time.Duration, error) {
	if d.stopped {
		return 0, nil
	}
	d.stopped = true
	t0 := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	exited, err := waitExit(d.cmd.Process, d.done, hermesdStopTimeout)
	took := time.Since(t0)
	if !exited {
		return 0, d.fail(fmt.Errorf("hermesd did not stop within %v of TERM; killed", hermesdStopTimeout))
	}
	if err != nil {
		return took, d.fail(fmt.Errorf("hermesd's clean stop: %v", err))
	}
	var left []int
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range d.pids {
		for pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			if time.Now().After(deadline) {
				left = append(left, pid)
				syscall.Kill(-pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(left) > 0 {
		return took, d.fail(fmt.Errorf("%d unit processes left after hermesd's clean stop (killed now): %v", len(left), left))
	}
	return took, nil
}

// stopMeasured stops hermesd as stop does, and also returns the time from
// TERM to the exit of the last unit process of the last status.
func (d *benchDaemon) stopMeasured() (gone, exit time.Duration, err error) {
	ex, err := openExits(d.pids)
	if err != nil {
		d.stop()
		return 0, 0, err
	}
	defer ex.close()
	t0 := time.Now()
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGTERM)
	left, err := ex.wait(hermesdStopTimeout)
	gone = time.Since(t0)
	if err == nil && left > 0 {
		err = fmt.Errorf("%d unit processes still running %v after TERM to hermesd", left, hermesdStopTimeout)
	}
	exited, werr := waitExit(d.cmd.Process, d.done, hermesdStopTimeout)
	exit = time.Since(t0)
	switch {
	case !exited:
		exit, err = 0, errors.Join(err, d.fail(fmt.Errorf("hermesd did not exit within %v of TERM; killed", hermesdStopTimeout)))
	case werr != nil && err == nil:
		err = d.fail(fmt.Errorf("hermesd's clean stop: %v", werr))
	}
	return gone, exit, err
}

// stopFloor is what stopping n TERM-obeying processes costs at the least:
// one process sends TERM to n `sleep` children and waits for their exits
// on pidfds, as stopMeasured waits for hermesd's units.
func stopFloor(n int) (time.Duration, error) {
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	var pids []int
	for range n {
		c := exec.Command("sleep", "100000")
		if err := c.Start(); err != nil {
			return 0, err
		}
		cmds = append(cmds, c)
		pids = append(pids, c.Process.Pid)
	}
	ex, err := openExits(pids)
	if err != nil {
		return 0, err
	}
	defer ex.close()
	t0 := time.Now()
	for _, c := range cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	left, err := ex.wait(10 * time.Second)
	took := time.Since(t0)
	if err == nil && left > 0 {
		err = fmt.Errorf("floor: %d sleeps still running 10s after TERM", left)
	}
	return took, err
}

// procSample is what /proc says of one process at one moment.
type procSample struct {
	at       time.Time
	ticks    uint64 // utime+stime
	switches int    // voluntary+nonvoluntary context switches, over its threads
	threads  int
	rssKB    int
	hwmKB    int
	anonKB   int // RssAnon: heap, stacks, the runtime's own
	fileKB   int // RssFile: pages of the binary and libraries mapped (clean, shared with the page cache)
}

func sampleProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	st, err := proc.ReadStat(pid)
	if err != nil {
		return s, err
	}
	s.ticks = st.CPU
	m, _ := procKB(pid, "status")
	s.rssKB, s.hwmKB, s.anonKB, s.fileKB = m["VmRSS"], m["VmHWM"], m["RssAnon"], m["RssFile"]
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return s, err
	}
	for _, t := range tasks {
		m, _ := procKB(pid, "task/"+t.Name()+"/status")
		s.switches += m["voluntary_ctxt_switches"] + m["nonvoluntary_ctxt_switches"]
		s.threads++
	}
	return s, nil
}

// metricsConfig is the hermes.yaml of the daemon measured with metrics
// on: served on a free loopback port, which its log names.
const metricsConfig = "metrics:\n  listen: 127.0.0.1:0\n"

// scrapeMetrics finds the metrics address in d's log, reads /metrics once
// and returns the number of garbage collections hermesd has run
// (go_gc_duration_seconds_count; -1 when absent). A scrape before the idle
// window makes the figures with metrics on include what a scrape leaves
// behind (the server's connection state, the encoder's buffers); one after
// tells how many collections ran in the window.
func (d *benchDaemon) scrapeMetrics(ctx context.Context) (int, error) {
	b, err := os.ReadFile(d.log)
	if err != nil {
		return 0, err
	}
	var addr string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "metrics listening") {
			for _, f := range strings.Fields(l) {
				if v, ok := strings.CutPrefix(f, "listen="); ok {
					addr = v
				}
			}
		}
	}
	if addr == "" {
		return 0, d.fail(errors.New("no \"metrics listening\" line with listen= in hermesd's log"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, d.fail(fmt.Errorf("scrape %s: %w", addr, err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		return 0, d.fail(fmt.Errorf("scrape %s: %s, %d bytes", addr, resp.Status, len(body)))
	}
	http.DefaultClient.CloseIdleConnections()
	gcs := -1
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "go_gc_duration_seconds_count "); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				gcs = n
			}
		}
	}
	return gcs, nil
}

// idleWindow samples pids at its start and after hermesdIdle.
func idleWindow(ctx context.Context, pids []int) (before, after []procSample, err error) {
	sample := func() ([]procSample, error) {
		out := make([]procSample, len(pids))
		for i, p := range pids {
			if out[i], err = sampleProc(p); err != nil {
				return nil, fmt.Errorf("sample pid %d: %w", p, err)
			}
		}
		return out, nil
	}
	if before, err = sample(); err != nil {
		return nil, nil, err
	}
	select {
	case <-time.After(hermesdIdle):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	after, err = sample()
	return before, after, err
}

// measureIdle samples hermesd (metrics off), its supervisor, an idle Go
// program and m, a hermesd with metrics on scraped once before, over the
// same hermesdIdle window, after hermesdSettle. The window is longer than
// forceGCPeriod, so the wake-ups of each Go process include at least one
// collection (m's count in the window, from a scrape after it, is in the
// rows).
func (d *benchDaemon) measureIdle(ctx context.Context, m *benchDaemon) ([]Row, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	base := exec.CommandContext(ctx, self, "-child", "idle-go")
	base.Cancel = func() error { return base.Process.Signal(syscall.SIGTERM) }
	out, _ := base.StdoutPipe()
	if err := base.Start(); err != nil {
		return nil, err
	}
	defer func() { base.Process.Signal(syscall.SIGTERM); base.Wait() }()
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		return nil, fmt.Errorf("idle Go baseline did not start: %q", l)
	}
	gc0, err := m.scrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(hermesdSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st, err := d.status(ctx)
	if err != nil {
		return nil, d.fail(err)
	}
	before, after, err := idleWindow(ctx, []int{d.cmd.Process.Pid, st.Supervisor.PID, base.Process.Pid, m.cmd.Process.Pid})
	if err != nil {
		return nil, d.fail(err)
	}
	gc1, err := m.scrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	gcs := -1
	if gc0 >= 0 && gc1 >= 0 {
		gcs = gc1 - gc0
	}
	return idleRows(before, after, gcs), nil
}

// idleRows are the rows of measureIdle's window: samples of hermesd,
// its supervisor, the idle Go program and hermesd with metrics on, which
// ran gcs collections in the window (-1: unknown).
func idleRows(before, after []procSample, gcs int) []Row {
	rate := func(i int) float64 {
		return float64(after[i].switches-before[i].switches) / after[i].at.Sub(before[i].at).Seconds()
	}
	h0, h1, g1, m1 := before[0], after[0], after[2], after[3]
	wall := h1.at.Sub(h0.at)
	cpu := float64(h1.ticks-h0.ticks) / clkTck / wall.Seconds() * 100
	mb := func(kb int) float64 { return float64(kb) / 1024 }
	rssMB, onMB := mb(h1.rssKB), mb(m1.rssKB)
	split := func(s procSample) string { return fmt.Sprintf("%.1f anon + %.1f file", mb(s.anonKB), mb(s.fileKB)) }
	gcNote := "unknown"
	if gcs >= 0 {
		gcNote = strconv.Itoa(gcs)
	}
	window := fmt.Sprintf("The window (%v) is longer than the %v to %v after which the Go runtime forces a collection in an idle process (forcegcperiod, looked at by sysmon every %v), so each Go process sampled collects at least once in it and those wake-ups are counted (the metrics-on hermesd ran %s collections in it, go_gc_duration_seconds_count)",
		hermesdIdle, forceGCPeriod, forceGCPeriod*3/2, forceGCPeriod/2, gcNote)
	return []Row{
		{Figure: fmt.Sprintf("hermesd RSS, %d units, idle, metrics off", hermesdUnits),
			Value: fmt.Sprintf("%.1f MB RSS = %s (%s; peak VmHWM %.1f MB; idle Go program %.1f MB = %s)",
				rssMB, split(h1), atMost(rssMB, 12, " MB"), mb(h1.hwmKB), mb(g1.rssKB), split(g1)),
			Method: fmt.Sprintf("VmRSS = RssAnon + RssFile of /proc/PID/status of the hermesd process (no metrics.listen) at the end of a %v idle window, %d owned `sleep` units running, %v after all were ready. "+
				"anon: heap, goroutine stacks and the runtime's own. file: the pages of the binary (text, rodata, pclntab) and of libc that the process has mapped, clean and shared with the page cache; "+
				"the kernel maps them 64 KiB around each fault, so this part follows the binary's size more than what hermesd does. "+
				"The idle Go program (this bench, waiting for TERM) is read the same way at the same moment: the runtime's own floor, its file part that of this bench's binary", hermesdIdle, hermesdUnits, hermesdSettle)},
		{Figure: fmt.Sprintf("hermesd RSS, %d units, idle, metrics on", hermesdUnits),
			Value: fmt.Sprintf("%.1f MB RSS = %s, %+.1f MB against metrics off (peak VmHWM %.1f MB); wake-ups %.2f/s",
				onMB, split(m1), onMB-rssMB, mb(m1.hwmKB), rate(3)),
			Method: fmt.Sprintf("a second hermesd with its own %d units and metrics.listen on a loopback port, scraped once (GET /metrics) before the window and once after it, sampled in the same window and the same way as the row above", hermesdUnits)},
		{Figure: fmt.Sprintf("hermesd CPU, %d units, idle", hermesdUnits),
			Value:  fmt.Sprintf("%.3f %% of one core (%s; %d ticks in %v)", cpu, atMost(cpu, 0.5, " %"), h1.ticks-h0.ticks, wall.Round(time.Second)),
			Method: "utime+stime delta of /proc/PID/stat (1/100 s ticks) over the idle window / wall time; hermesd only (the units and the supervisor are other processes)"},
		{Figure: fmt.Sprintf("hermesd wake-ups, %d units, idle", hermesdUnits),
			Value: fmt.Sprintf("%.2f/s over %d threads (%s; idle Go program: %.2f/s; supervisor sh: %.2f/s)", rate(0), h1.threads, atMost(rate(0), 0.1, "/s"), rate(2), rate(1)),
			Method: "voluntary+nonvoluntary context switches summed over /proc/PID/task/*/status, delta over the idle window / wall time. " +
				"Counts the Go runtime's own switches (sysmon, netpoller, GC workers; an idle Go program with no timer shows the baseline in the same window) " +
				"and those of hermesd's timers. A thread that exits in the window takes its count with it. " + window},
	}
}

// measureReload edits unit u000 hermesdEdits times as editors save (write a
// temp file, rename it over the unit file); each version's command writes
// its number to a FIFO before exec'ing sleep. The clock runs from the
// rename to reading that number.
func (d *benchDaemon) measureReload(ctx context.Context) (Row, error) {
	fifo := filepath.Join(d.dir, "marker.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return Row{}, err
	}
	// O_RDWR: opening never blocks, and the reader never sees EOF between
	// two writers.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return Row{}, err
	}
	lines := make(chan string, 1)
	quit := make(chan struct{})
	reader := make(chan struct{})
	defer func() { f.Close(); close(quit); <-reader }()
	go func() { // stopped by the deferred close of f and quit, joined through reader
		defer close(reader)
		defer close(lines)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-quit:
				return
			}
		}
	}()
	var ds []time.Duration
	path := d.unitPath(0)
	tmp := filepath.Join(d.units, ".u000.yaml.tmp")
	for gen := 1; gen <= hermesdEdits; gen++ {
		y := fmt.Sprintf("shell: %q\n", fmt.Sprintf("echo %d >%s; exec sleep 100000", gen, fifo))
		if err := os.WriteFile(tmp, []byte(y), 0o600); err != nil {
			return Row{}, err
		}
		t0 := time.Now()
		if err := os.Rename(tmp, path); err != nil {
			return Row{}, err
		}
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return Row{}, errors.New("marker FIFO closed")
				}
				if l == strconv.Itoa(gen) {
					ds = append(ds, time.Since(t0))
					break wait
				}
			case <-timeout:
				return Row{}, d.fail(fmt.Errorf("edit %d: no new process wrote its marker within 10s", gen))
			case <-ctx.Done():
				return Row{}, ctx.Err()
			}
		}
		time.Sleep(hermesdEditPause)
	}
	if st, err := d.status(ctx); err == nil {
		d.pids = d.pids[:0]
		for _, u := range st.Units {
			d.pids = append(d.pids, u.PID)
		}
	}
	med := percentile(ds, 0.5)
	tn, tv := tail(ds)
	return Row{
		Figure: "hot reload: unit file saved → new process running",
		Value:  fmt.Sprintf("median %v (%s), %s %v", roundDur(med), atMostDur(med, 20*time.Millisecond), tn, roundDur(tv)),
		Method: fmt.Sprintf("%d edits of one unit among %d, each an atomic save (write temp, rename) changing its command, %v apart; clock from rename(2) to the new process's first line on a FIFO; includes the watcher's event, the reload (reading and hashing all %d unit files), the old process's stop (TERM) and the spawn", hermesdEdits, hermesdUnits, hermesdEditPause, hermesdUnits),
	}, nil
}
