package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/control"
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

// loadEnv tags every unit process of one run: its value is "<tag>/<unit>",
// so that a scan of /proc finds this run's processes and their unit. The
// generation of a unit's version is sleep's second argument (sleep sums its
// arguments): the running process says which edit it runs.
const loadEnv = "HERMES_BENCH_LOAD"

// loadUnitYAML is the unit file of generation gen.
func loadUnitYAML(tag, name string, gen int) []byte {
	return fmt.Appendf(nil, "command: [sleep, \"100000\", \"%d\"]\nenv: {%s: %q}\ntimeouts: {stop: 5s}\n", gen, loadEnv, tag+"/"+name)
}

// loadWrite saves a unit file as editors do: write a temp file, rename it
// onto the unit's name.
func loadWrite(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".yaml.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".yaml"))
}

// loadProc is one unit process seen in /proc.
type loadProc struct {
	pid, pgid int
	start     uint64
	unit      string
	gen       int
}

// loadScan lists the live (not zombie) sleep processes tagged with tag.
// A process between fork and exec (the spawn's gate shell) is skipped.
func loadScan(tag string) []loadProc {
	pids, _ := proc.Pids()
	var out []loadProc
	for _, pid := range pids {
		if p, ok := loadRead(tag, pid); ok {
			out = append(out, p)
		}
	}
	return out
}

func loadRead(tag string, pid int) (loadProc, bool) {
	argv, err := proc.Cmdline(pid)
	if err != nil || len(argv) != 3 || argv[0] != "sleep" {
		return loadProc{}, false
	}
	env, err := proc.Environ(pid)
	if err != nil {
		return loadProc{}, false
	}
	var unit string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, loadEnv+"="+tag+"/"); ok {
			unit = v
		}
	}
	if unit == "" {
		return loadProc{}, false
	}
	st, err := proc.ReadStat(pid)
	if err != nil || st.Zombie() {
		return loadProc{}, false
	}
	gen, err := strconv.Atoi(argv[2])
	if err != nil {
		return loadProc{}, false
	}
	return loadProc{pid: pid, pgid: st.PGID, start: st.StartTime, unit: unit, gen: gen}, true
}

// loadDuplicates counts units with two live groups at one moment: a scan
// that saw two groups of one unit is confirmed by reading both again, in
// the order first read (both then were alive at once).
func loadDuplicates(tag string, ps []loadProc) int {
	by := map[string][]loadProc{}
	for _, p := range ps {
		by[p.unit] = append(by[p.unit], p)
	}
	n := 0
	for _, group := range by {
		pgids := map[int]bool{}
		for _, p := range group {
			pgids[p.pgid] = true
		}
		if len(pgids) < 2 {
			continue
		}
		alive := true
		for _, p := range group {
			q, ok := loadRead(tag, p.pid)
			alive = alive && ok && q.start == p.start
		}
		if alive {
			n++
		}
	}
	return n
}

// loadVM reads VmRSS and VmHWM of pid, in KiB.
func loadVM(pid int) (rss, hwm int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

// loadCPU is pid's user+system CPU time so far.
func loadCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, _ := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// loadBinary is the hermesd to measure: $HERMES_BENCH_HERMESD if set, else
// bin/hermesd as `make bench` builds it, else one built now into dir.
func loadBinary(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv("HERMES_BENCH_HERMESD"); p != "" {
		return p, nil
	}
	if p, err := filepath.Abs(filepath.Join("bin", "hermesd")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p := filepath.Join(dir, "hermesd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", p, "./cmd/hermesd")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build hermesd: %w", err)
	}
	return p, nil
}

// loadSettled reports how many units run their last generation: status
// says running, and the process at the pid status gives is that version.
func loadSettled(ctx context.Context, c *control.Client, tag string, want map[string]int) (int, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range st.Units {
		g, ok := want[u.Name]
		if !ok || u.State != "running" || u.PID == 0 {
			continue
		}
		if p, ok := loadRead(tag, u.PID); ok && p.unit == u.Name && p.gen == g {
			n++
		}
	}
	return n, nil
}

func benchLoad(ctx context.Context) (rows []Row, err error) {
	dir, err := os.MkdirTemp("", "hermes-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, err := loadBinary(ctx, dir)
	if err != nil {
		return nil, err
	}
	unitsDir, stateDir := filepath.Join(dir, "units"), filepath.Join(dir, "state")
	for _, d := range []string{unitsDir, stateDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	tag := filepath.Base(dir)
	names := make([]string, loadUnits)
	want := map[string]int{}
	for i := range names {
		names[i] = fmt.Sprintf("u%03d", i)
		want[names[i]] = 0
		if err := loadWrite(unitsDir, names[i], loadUnitYAML(tag, names[i], 0)); err != nil {
			return nil, err
		}
	}

	socket := filepath.Join(stateDir, "ctl.sock")
	logPath := filepath.Join(dir, "hermesd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--units", unitsDir, "--state", stateDir, "--socket", socket, "--config", filepath.Join(dir, "none.yaml"))
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NOTIFY_SOCKET=") })
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	defer func() {
		if e := loadStop(cmd, exited, tag); e != nil && err == nil {
			err = e
		}
		if err != nil {
			err = fmt.Errorf("%w (hermesd log kept in %s)", err, loadKeepLog(logPath))
		}
	}()

	// All units running.
	var c *control.Client
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if c == nil {
			c, _ = control.Dial(socket)
		}
		if c != nil {
			if n, err := loadSettled(ctx, c, tag, want); err == nil && n == loadUnits {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %d units were not all running within 2m", loadUnits)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("hermesd exited: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer c.Close()
	rssStart, _ := loadVM(pid)
	cpuStart := loadCPU(pid)

	// Status queries, RSS samples and duplicate scans while the edits run.
	lctx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	var statusErrs []error
	wg.Go(func() {
		t := time.NewTicker(time.Second / loadStatusRate)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			t0 := time.Now()
			_, err := c.Status(qctx)
			d := time.Since(t0)
			cancel()
			mu.Lock()
			lat = append(lat, d)
			if err != nil {
				statusErrs = append(statusErrs, err)
			}
			mu.Unlock()
		}
	})
	rssPeak, dups, scans := rssStart, 0, 0
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			r, _ := loadVM(pid)
			mu.Lock()
			rssPeak = max(rssPeak, r)
			mu.Unlock()
			if i%10 == 9 { // a /proc scan a second: it costs CPU the machine shares
				d := loadDuplicates(tag, loadScan(tag))
				mu.Lock()
				dups += d
				scans++
				mu.Unlock()
			}
		}
	})

	// The edits: loadRate a second, each round a fresh random permutation
	// of the units, so that every unit is edited several times in sequence,
	// at spacings from one edit slot to a whole round.
	rng := rand.New(rand.NewPCG(7, 1))
	total := int(loadFor.Seconds()) * loadRate
	var perm []int
	begin := time.Now()
	var editErr error
	for k := range total {
		if k%loadUnits == 0 {
			perm = rng.Perm(loadUnits)
		}
		due := begin.Add(time.Duration(k) * time.Second / loadRate)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				editErr = ctx.Err()
			case <-time.After(d):
			}
		}
		if editErr != nil {
			break
		}
		name := names[perm[k%loadUnits]]
		gen := k + 1
		if editErr = loadWrite(unitsDir, name, loadUnitYAML(tag, name, gen)); editErr != nil {
			break
		}
		want[name] = gen
	}
	lastEdit := time.Now()
	editSpan := lastEdit.Sub(begin)

	// Settle: every unit on its last generation.
	var settled int
	var settleErr error
	for {
		settled, settleErr = loadSettled(ctx, c, tag, want)
		if settled == loadUnits || time.Since(lastEdit) > loadSettle || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling: hermesd gives no settle event
	}
	settleTime := time.Since(lastEdit)
	cpuUsed := loadCPU(pid) - cpuStart
	loadTime := time.Since(begin)
	stopLoad()
	wg.Wait()
	rssEnd, hwm := loadVM(pid)
	if editErr != nil {
		return nil, fmt.Errorf("edit: %w", editErr)
	}

	mu.Lock()
	defer mu.Unlock()
	errNote := ""
	if len(statusErrs) > 0 {
		errNote = fmt.Sprintf(", %d errors (first: %v)", len(statusErrs), statusErrs[0])
	}
	settleVal := fmt.Sprintf("%v", settleTime.Round(10*time.Millisecond))
	if settled != loadUnits {
		settleVal = fmt.Sprintf("not settled after %v", loadSettle)
		if settleErr != nil {
			settleVal += fmt.Sprintf(" (status: %v)", settleErr)
		}
	}
	method := fmt.Sprintf("hermesd binary, %d sleep units, %d edits/s (temp+rename, random permutation per round) for %v", loadUnits, loadRate, loadFor)
	rows = []Row{
		{"load: edits made", fmt.Sprintf("%d in %v (%.1f/s)", total, editSpan.Round(10*time.Millisecond), float64(total)/editSpan.Seconds()), method},
		{"load: status latency", fmt.Sprintf("p50 %v, p99 %v (%s), max %v over %d queries%s",
			roundDur(percentile(lat, 0.5)), roundDur(percentile(lat, 0.99)), atMostDur(percentile(lat, 0.99), 100*time.Millisecond), roundDur(slices.Max(lat)), len(lat), errNote),
			fmt.Sprintf("control client, %d/s, from the first edit until settled", loadStatusRate)},
		{"load: hermesd RSS", fmt.Sprintf("start %s, peak %s (VmHWM %s), end %s", loadMiB(rssStart), loadMiB(rssPeak), loadMiB(hwm), loadMiB(rssEnd)),
			"VmRSS all running / max of 100ms samples / after settle; VmHWM since exec"},
		{"load: hermesd CPU", fmt.Sprintf("%.1f s over %v (%.0f%% of one core)", cpuUsed.Seconds(), loadTime.Round(time.Second), 100*cpuUsed.Seconds()/loadTime.Seconds()),
			"utime+stime of hermesd, first edit until settled"},
		{"load: units on their last edit", fmt.Sprintf("%d/%d (%s)", settled, loadUnits, atLeast(float64(settled), loadUnits, " units")),
			"status running and /proc/PID/cmdline carries the last generation written"},
		{"load: last edit → all settled", settleVal, "polled every 100ms through status and /proc"},
		{"load: duplicate groups seen", fmt.Sprintf("%d in %d scans (%s)", dups, scans, atMost(float64(dups), 0, "")), "/proc scan each second: two live groups of one unit, confirmed"},
	}
	return rows, nil
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
	if left := loadScan(tag); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p.pid, syscall.SIGKILL)
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
