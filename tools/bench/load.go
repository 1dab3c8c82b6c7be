package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit/loadunits"
	"github.com/hermes-units/hermes/proc"
)

// The load section (issue 7, item 6): the real hermesd with loadUnits
// units, edited loadRate times a second for loadFor, while status is asked
// loadStatusRate times a second. Figures, not assertions: the correctness
// part, at a smaller scale, is cmd/hermesd's TestLoadEditsApplied.
const (
	loadUnits      = 500
	loadRate       = 50 // edits per second
	loadFor        = 30 * time.Second
	loadStatusRate = 20 // status queries per second
	loadSettle     = 3 * time.Minute
)

// loadVM reads VmRSS and VmHWM of pid, in KiB.
func loadVM(pid int) (rss, hwm int) {
	m, _ := procKB(pid, "status")
	return m["VmRSS"], m["VmHWM"]
}

// loadCPU is pid's user+system CPU time so far.
func loadCPU(pid int) time.Duration {
	st, _ := proc.ReadStat(pid) // gone: 0
	return time.Duration(st.CPU) * time.Second / clkTck
}

// loadBinary is the hermesd to measure: $HERMES_BENCH_HERMESD if set, else
// bin/hermesd as `make bench` builds it, else one built now into dir
// (hermesdBinary).
func loadBinary(ctx context.Context, dir string) (string, error) {
	if os.Getenv(envHermesd) == "" {
		if p, err := filepath.Abs(filepath.Join("bin", "hermesd")); err == nil {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return hermesdBinary(ctx, dir)
}

// loadSettled reports how many units run their last generation: status
// says running, and the process at the pid status gives is that version.
func loadSettled(ctx context.Context, c *control.Client, tag string, want map[string]int) (int, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for name, p := range loadunits.Running(st, tag) {
		if g, ok := want[name]; ok && p.Gen == g {
			n++
		}
	}
	return n, nil
}

// benchLoad runs the load section: hermesd on loadUnits units of dir (a
// fresh temporary directory), all running, then edited and queried (measure),
// then stopped (loadStop). On an error, hermesd's log is kept out of the
// directory, which is removed, and the error says where.
func benchLoad(ctx context.Context, dir string) (rows []Row, err error) {
	bin, err := loadBinary(ctx, dir)
	if err != nil {
		return nil, err
	}
	r, err := loadPrepare(dir)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	if err := r.start(bin, logf); err != nil {
		return nil, err
	}
	defer func() {
		if e := loadStop(r.cmd, r.exited, r.tag); e != nil && err == nil {
			err = e
		}
		if err != nil {
			err = fmt.Errorf("%w (hermesd log kept in %s)", err, loadKeepLog(r.logPath))
		}
	}()
	c, err := r.waitRunning(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	fig, err := r.measure(ctx, c)
	if err != nil {
		return nil, err
	}
	return fig.rows(), nil
}

// loadEdits is how many edits a run makes: loadRate a second for loadFor.
const loadEdits = int(loadFor/time.Second) * loadRate

// loadRun is one run of the load section: its paths, its units and the
// hermesd under test. want is written by edit and read by settle, both on
// the caller's goroutine.
type loadRun struct {
	dir                string // the run's temporary directory
	unitsDir, stateDir string
	socket, logPath    string
	tag                string         // tags the run's processes (loadunits.Env)
	names              []string       // the units, in creation order
	want               map[string]int // unit → generation last written
	cmd                *exec.Cmd      // hermesd, once start succeeded
	exited             chan error     // cmd.Wait's result; put back by whoever reads it
}

// loadPrepare creates the units and state directories in dir and writes
// generation 0 of every unit.
func loadPrepare(dir string) (*loadRun, error) {
	r := &loadRun{
		dir:      dir,
		unitsDir: filepath.Join(dir, "units"),
		stateDir: filepath.Join(dir, "state"),
		logPath:  filepath.Join(dir, "hermesd.log"),
		tag:      filepath.Base(dir),
		names:    make([]string, loadUnits),
		want:     map[string]int{},
	}
	r.socket = filepath.Join(r.stateDir, "ctl.sock")
	for _, d := range []string{r.unitsDir, r.stateDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	for i := range r.names {
		r.names[i] = fmt.Sprintf("u%03d", i)
		r.want[r.names[i]] = 0
		if err := loadunits.Save(r.unitsDir, r.names[i], loadunits.YAML(r.tag, r.names[i], 0)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// start starts hermesd bin on the run's directories, outside any systemd
// notification (NOTIFY_SOCKET dropped), logging to logf, and a goroutine
// that puts its exit on r.exited.
func (r *loadRun) start(bin string, logf *os.File) error {
	cmd := exec.Command(bin, "--units", r.unitsDir, "--state", r.stateDir, "--socket", r.socket, "--config", filepath.Join(r.dir, "none.yaml"))
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NOTIFY_SOCKET=") })
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	r.cmd = cmd
	r.exited = make(chan error, 1)
	go func() { r.exited <- cmd.Wait() }()
	return nil
}

// waitRunning dials the control socket until it answers and waits, polling
// every 200ms for up to 2m, until every unit runs its generation 0. It
// fails when ctx ends or hermesd exits first.
func (r *loadRun) waitRunning(ctx context.Context) (*control.Client, error) {
	var c *control.Client
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if c == nil {
			c, _ = control.Dial(r.socket)
		}
		if c != nil {
			if n, err := loadSettled(ctx, c, r.tag, r.want); err == nil && n == loadUnits {
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %d units were not all running within 2m", loadUnits)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-r.exited:
			r.exited <- err
			return nil, fmt.Errorf("hermesd exited: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// loadFigures are what measure saw in one run.
type loadFigures struct {
	samples               *loadSamples  // read only once its samplers have returned
	editSpan              time.Duration // first edit to last
	settled               int           // units on their last generation at the end
	settleErr             error         // the last settle query's
	settleTime            time.Duration // last edit to settled, or to giving up
	cpuUsed               time.Duration // hermesd's utime+stime, all running to settled
	loadTime              time.Duration // first edit to settled
	rssStart, rssEnd, hwm int           // KiB: all running, after settle, VmHWM
}

// measure runs the load on running units: status queries and memory and
// duplicate samples (loadSamples) from before the first edit until
// settled, the edits (edit), then settle. An edit's error is returned
// after settle, once the samplers have stopped.
func (r *loadRun) measure(ctx context.Context, c *control.Client) (*loadFigures, error) {
	pid := r.cmd.Process.Pid
	fig := &loadFigures{}
	fig.rssStart, _ = loadVM(pid)
	cpuStart := loadCPU(pid)

	lctx, stopLoad := context.WithCancel(ctx)
	s := &loadSamples{rssPeak: fig.rssStart}
	var wg sync.WaitGroup
	wg.Go(func() { s.queryStatus(ctx, lctx, c) })
	wg.Go(func() { s.scan(lctx, pid, r.tag) })

	begin, editErr := r.edit(ctx)
	lastEdit := time.Now()
	fig.editSpan = lastEdit.Sub(begin)
	fig.settled, fig.settleErr = r.settle(ctx, c, lastEdit)
	fig.settleTime = time.Since(lastEdit)
	fig.cpuUsed = loadCPU(pid) - cpuStart
	fig.loadTime = time.Since(begin)
	stopLoad()
	wg.Wait()
	fig.rssEnd, fig.hwm = loadVM(pid)
	if editErr != nil {
		return nil, fmt.Errorf("edit: %w", editErr)
	}
	fig.samples = s
	return fig, nil
}

// loadSamples are the figures the samplers of measure gather while the
// edits run, each in its own goroutine until lctx ends.
type loadSamples struct {
	mu         sync.Mutex
	lat        []time.Duration // of each status query; guarded by mu
	statusErrs []error         // guarded by mu
	rssPeak    int             // KiB, the highest VmRSS sampled; guarded by mu
	dups       int             // duplicate groups seen in all scans; guarded by mu
	scans      int             // guarded by mu
}

// queryStatus asks status loadStatusRate times a second until lctx ends,
// each query bounded by 10s under ctx, and records its latency and error.
func (s *loadSamples) queryStatus(ctx, lctx context.Context, c *control.Client) {
	every(lctx, time.Second/loadStatusRate, func(int) {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t0 := time.Now()
		_, err := c.Status(qctx)
		d := time.Since(t0)
		cancel()
		s.mu.Lock()
		s.lat = append(s.lat, d)
		if err != nil {
			s.statusErrs = append(s.statusErrs, err)
		}
		s.mu.Unlock()
	})
}

// scan samples hermesd's VmRSS every 100ms, and once a second scans /proc
// for duplicate groups of the run's units, until lctx ends.
func (s *loadSamples) scan(lctx context.Context, pid int, tag string) {
	every(lctx, 100*time.Millisecond, func(i int) {
		r, _ := loadVM(pid)
		s.mu.Lock()
		s.rssPeak = max(s.rssPeak, r)
		s.mu.Unlock()
		if i%10 == 9 { // a /proc scan a second: it costs CPU the machine shares
			d := len(loadunits.Duplicates(tag, loadunits.Scan(tag)))
			s.mu.Lock()
			s.dups += d
			s.scans++
			s.mu.Unlock()
		}
	})
}

// every calls f(i), i = 0, 1, …, each period from now until ctx ends.
func every(ctx context.Context, period time.Duration, f func(i int)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f(i)
	}
}

// edit makes the loadEdits edits: loadRate a second, each round a fresh
// random permutation of the units, so that every unit is edited several
// times in sequence, at spacings from one edit slot to a whole round. It
// stops at the first error or when ctx ends, and returns the time the
// edits began.
func (r *loadRun) edit(ctx context.Context) (begin time.Time, err error) {
	rng := rand.New(rand.NewPCG(7, 1))
	var perm []int
	begin = time.Now()
	for k := range loadEdits {
		if k%loadUnits == 0 {
			perm = rng.Perm(loadUnits)
		}
		due := begin.Add(time.Duration(k) * time.Second / loadRate)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				return begin, ctx.Err()
			case <-time.After(d):
			}
		}
		name := r.names[perm[k%loadUnits]]
		gen := k + 1
		if err := loadunits.Save(r.unitsDir, name, loadunits.YAML(r.tag, name, gen)); err != nil {
			return begin, err
		}
		r.want[name] = gen
	}
	return begin, nil
}

// settle polls, every 100ms, until every unit runs its last generation,
// loadSettle has passed since lastEdit, or ctx ends; it returns the units
// settled and the last query's error.
func (r *loadRun) settle(ctx context.Context, c *control.Client, lastEdit time.Time) (settled int, err error) {
	for {
		settled, err = loadSettled(ctx, c, r.tag, r.want)
		if settled == loadUnits || time.Since(lastEdit) > loadSettle || ctx.Err() != nil {
			return settled, err
		}
		time.Sleep(100 * time.Millisecond) // polling: hermesd gives no settle event
	}
}

// rows are the section's table rows for fig.
func (fig *loadFigures) rows() []Row {
	s := fig.samples
	s.mu.Lock()
	defer s.mu.Unlock()
	errNote := ""
	if len(s.statusErrs) > 0 {
		errNote = fmt.Sprintf(", %d errors (first: %v)", len(s.statusErrs), s.statusErrs[0])
	}
	settleVal := fmt.Sprintf("%v", fig.settleTime.Round(10*time.Millisecond))
	if fig.settled != loadUnits {
		settleVal = fmt.Sprintf("not settled after %v", loadSettle)
		if fig.settleErr != nil {
			settleVal += fmt.Sprintf(" (status: %v)", fig.settleErr)
		}
	}
	lat := s.lat
	method := fmt.Sprintf("hermesd binary, %d sleep units, %d edits/s (temp+rename, random permutation per round) for %v", loadUnits, loadRate, loadFor)
	return []Row{
		{"load: edits made", fmt.Sprintf("%d in %v (%.1f/s)", loadEdits, fig.editSpan.Round(10*time.Millisecond), float64(loadEdits)/fig.editSpan.Seconds()), method},
		{"load: status latency", fmt.Sprintf("p50 %v, p99 %v (%s), max %v over %d queries%s",
			roundDur(percentile(lat, 0.5)), roundDur(percentile(lat, 0.99)), atMostDur(percentile(lat, 0.99), 100*time.Millisecond), roundDur(slices.Max(lat)), len(lat), errNote),
			fmt.Sprintf("control client, %d/s, from the first edit until settled", loadStatusRate)},
		{"load: hermesd RSS", fmt.Sprintf("start %s, peak %s (VmHWM %s), end %s", loadMiB(fig.rssStart), loadMiB(s.rssPeak), loadMiB(fig.hwm), loadMiB(fig.rssEnd)),
			"VmRSS all running / max of 100ms samples / after settle; VmHWM since exec"},
		{"load: hermesd CPU", fmt.Sprintf("%.1f s over %v (%.0f%% of one core)", fig.cpuUsed.Seconds(), fig.loadTime.Round(time.Second), 100*fig.cpuUsed.Seconds()/fig.loadTime.Seconds()),
			"utime+stime of hermesd, first edit until settled"},
		{"load: units on their last edit", fmt.Sprintf("%d/%d (%s)", fig.settled, loadUnits, atLeast(float64(fig.settled), loadUnits, " units")),
			"status running and /proc/PID/cmdline carries the last generation written"},
		{"load: last edit → all settled", settleVal, "polled every 100ms through status and /proc"},
		{"load: duplicate groups seen", fmt.Sprintf("%d in %d scans (%s)", s.dups, s.scans, atMost(float64(s.dups), 0, "")), "/proc scan each second: two live groups of one unit, confirmed"},
	}
}

func loadMiB(kib int) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// loadStop stops hermesd with TERM and checks that none of the run's
// processes is left; any that is, is killed and reported.
func loadStop(cmd *exec.Cmd, exited chan error, tag string) error {
	cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case werr := <-exited:
		if werr != nil {
			err = fmt.Errorf("hermesd exit after TERM: %w", werr)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-exited
		err = errors.New("hermesd did not stop within 2m of TERM; killed")
	}
	if left := loadunits.Scan(tag); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
		err = errors.Join(err, fmt.Errorf("%d unit processes left after hermesd stopped; killed", len(left)))
	}
	return err
}

// loadKeepLog copies hermesd's log out of the temp directory, which is
// removed, and returns where.
func loadKeepLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "nowhere: " + err.Error()
	}
	f, err := os.CreateTemp("", "hermes-load-*.log")
	if err != nil {
		return "nowhere: " + err.Error()
	}
	defer f.Close()
	f.Write(b)
	return f.Name()
}
