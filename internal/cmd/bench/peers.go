package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// The peers section (make bench-peers, not in CI) runs the same five
// operations against hermesd and against each other process manager found
// on PATH, in the same run, interleaved round by round (the order rotates
// each round), and prints each peer's medians beside hermesd's with their
// ratio. Every manager runs peerUnits idle units on configuration written
// into a fresh temporary directory, and every unit is `sleep 100000 TAG`
// (unit 0 reaches it through `sh -c`, after writing its generation to a
// FIFO), so that one /proc scan finds the units of any manager by TAG.
//
// A manager's trial: start, status peerStatusN times, edit unit 0
// peerEditN times, a clean stop; then a second start and SIGKILL of the
// process that owns the units. After each, nothing of the trial may be
// left: a process carrying the trial's environment tag or unit tags is
// killed and reported as an error (survivors of the SIGKILL row are its
// figure, and are killed after it is read).

var (
	peersOnly  = flag.Bool("peers", false, "run only the peers section: hermesd against supervisord, pm2 and process-compose where on PATH (make bench-peers)")
	peerRounds = flag.Int("peer-rounds", 5, "peers section: rounds, each a trial of every manager")
)

const (
	peerUnits   = 100
	peerStatusN = 5
	peerEditN   = 5
	peerWait    = 60 * time.Second     // for units to run, a stop, an edit
	peerKilled  = 2 * time.Second      // how long the units may take to go after their owner's SIGKILL
	peerPoll    = 2 * time.Millisecond // /proc scans while waiting for units
	envPeerTag  = "BENCH_PEER"         // in every manager's environment: finds what a trial leaves
	peerSleepS  = "100000"             // every unit's first sleep argument
	peerMarkGen = "BENCH_PEER_GEN"     // unit 0's generation, in its environment
)

// peer drives one process manager through a trial. Methods are called in
// order: Start, then any of Owner, Status, Edit, then Stop or a SIGKILL of
// Owner, then Close. Start and Edit return once the manager was asked (or
// the command that asks it exited), not once the unit runs: the caller's
// clock stops at the units' own events.
type peer interface {
	Name() string
	// Start writes t's configuration into t.dir and starts the manager.
	Start(ctx context.Context, t *peerTrial) error
	// Owner is the pid whose SIGKILL is the owner-death row.
	Owner() (int, error)
	// Status asks the manager for the state of every unit, as its user
	// does (its command-line client).
	Status(ctx context.Context) error
	// Edit writes unit 0's configuration with generation gen and makes
	// the manager apply it, as its user does.
	Edit(ctx context.Context, gen int) error
	// Stop asks the manager for a clean stop of itself and its units.
	Stop(ctx context.Context) error
	// Close waits for the manager process to be gone after a stop or a
	// kill, bounded by peerWait, and kills it if it is not.
	Close() error
	// Describe says how the row of op ("stop", "status", "edit",
	// "owner") is played with this manager.
	Describe(op string) string
}

// peerTrial is one start of one manager: its directory, its units' tags,
// and unit 0's marker FIFO.
type peerTrial struct {
	dir  string
	tags []string // unit i runs `sleep peerSleepS tags[i]`
	env  string   // envPeerTag=dir, in the manager's environment
	fifo *markerFIFO
}

// unitArgv is unit i's command at generation gen: unit 0 writes gen to
// the FIFO (its generation comes from the environment, so that an edit
// changes the environment, which every manager applies) and execs sleep.
func (t *peerTrial) unitArgv(i int) []string {
	if i == 0 {
		return []string{"sh", "-c", fmt.Sprintf(`echo "$%s" >%s; exec sleep %s %s`, peerMarkGen, t.fifo.path, peerSleepS, t.tags[0])}
	}
	return []string{"sleep", peerSleepS, t.tags[i]}
}

func unitName(i int) string { return fmt.Sprintf("u%03d", i) }

// peerSerial numbers the trials of one run, for unique tags.
var peerSerial int

func newPeerTrial(root string) (*peerTrial, error) {
	peerSerial++
	dir := filepath.Join(root, fmt.Sprintf("t%03d", peerSerial))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	t := &peerTrial{dir: dir, env: envPeerTag + "=" + dir}
	base := (os.Getpid()%1000)*1_000_000 + peerSerial*1000
	for i := range peerUnits {
		t.tags = append(t.tags, strconv.Itoa(base+i))
	}
	var err error
	t.fifo, err = openMarker(filepath.Join(dir, "marker.fifo"))
	return t, err
}

// running returns the pids of the trial's units now running (sleep with
// its tag, not a zombie), by tag.
func (t *peerTrial) running() map[string]int {
	want := map[string]bool{}
	for _, g := range t.tags {
		want[g] = true
	}
	out := map[string]int{}
	pids, _ := proc.Pids()
	for _, pid := range pids {
		argv, err := proc.Cmdline(pid)
		if err != nil || len(argv) != 3 || filepath.Base(argv[0]) != "sleep" || argv[1] != peerSleepS || !want[argv[2]] {
			continue
		}
		if st, err := proc.ReadStat(pid); err == nil && !st.Zombie() {
			out[argv[2]] = pid
		}
	}
	return out
}

// waitRunning scans /proc every peerPoll until every unit runs, and
// returns their pids.
func (t *peerTrial) waitRunning(ctx context.Context) ([]int, error) {
	deadline := time.Now().Add(peerWait)
	for {
		if r := t.running(); len(r) == len(t.tags) {
			pids := make([]int, 0, len(r))
			for _, g := range t.tags {
				pids = append(pids, r[g])
			}
			return pids, nil
		} else if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d units running after %v", len(r), len(t.tags), peerWait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(peerPoll):
		}
	}
}

// live lists the trial's live processes: its units, and any process
// whose environment carries the trial's tag.
func (t *peerTrial) live() []int {
	var out []int
	for _, pid := range t.running() {
		out = append(out, pid)
	}
	pids, _ := proc.Pids()
	for _, pid := range pids {
		if pid == os.Getpid() || slices.Contains(out, pid) {
			continue
		}
		env, err := proc.Environ(pid)
		if err != nil || !slices.Contains(env, t.env) {
			continue
		}
		if st, err := proc.ReadStat(pid); err == nil && !st.Zombie() {
			out = append(out, pid)
		}
	}
	return out
}

// leftovers waits up to grace for the trial's processes to be gone (a
// manager's helper may exit just after it), then kills what is left and
// returns how many that was.
func (t *peerTrial) leftovers(grace time.Duration) int {
	deadline := time.Now().Add(grace)
	for {
		left := t.live()
		if len(left) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return len(left)
		}
		time.Sleep(10 * time.Millisecond) // processes not our children: no exit event to wait on
	}
}

// markerFIFO is a FIFO unit 0 writes its generation to, and a reader of
// its lines. Opened O_RDWR: opening never blocks, and the reader never
// sees EOF between two writers.
type markerFIFO struct {
	path  string
	f     *os.File
	lines chan string
	quit  chan struct{}
	done  chan struct{}
}

func openMarker(path string) (*markerFIFO, error) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	m := &markerFIFO{path: path, f: f, lines: make(chan string, 16), quit: make(chan struct{}), done: make(chan struct{})}
	go func() { // stopped by close (the file closed, quit), joined through done
		defer close(m.done)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			select {
			case m.lines <- sc.Text():
			case <-m.quit:
				return
			}
		}
	}()
	return m, nil
}

// wait returns once the line gen was read, or fails after peerWait.
func (m *markerFIFO) wait(ctx context.Context, gen int) error {
	timeout := time.After(peerWait)
	for {
		select {
		case l := <-m.lines:
			if l == strconv.Itoa(gen) {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no process of generation %d within %v", gen, peerWait)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (m *markerFIFO) close() {
	close(m.quit)
	m.f.Close()
	<-m.done
}

// peerFigures are one manager's samples over the run.
type peerFigures struct {
	start, stop, status, edit, kill []time.Duration
	survivors                       []int // units still running peerKilled after each SIGKILL of their owner
}

// peerOps name the rows, in the table's order.
var peerOps = []string{"start", "clean stop", "status", "edit → restart", "owner SIGKILL"}

func (f *peerFigures) samples(op string) []time.Duration {
	return map[string][]time.Duration{"start": f.start, "clean stop": f.stop, "status": f.status, "edit → restart": f.edit, "owner SIGKILL": f.kill}[op]
}

// availablePeers are hermesd first, then the managers found on PATH; the
// names of those not found are returned apart.
func availablePeers(ctx context.Context, dir string) (peers []peer, missing []string, err error) {
	h, err := newHermesPeer(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	peers = append(peers, h)
	if p, err := newSupervisordPeer(); err == nil {
		peers = append(peers, p)
	} else {
		missing = append(missing, "supervisord")
	}
	if p, err := newPM2Peer(); err == nil {
		peers = append(peers, p)
	} else {
		missing = append(missing, "pm2")
	}
	missing = append(missing, "process-compose (no driver: it could not be installed where this section was written)")
	return peers, missing, nil
}

func benchPeers(ctx context.Context) ([]Row, error) {
	root, err := os.MkdirTemp("", "hermes-bench-peers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	peers, missing, err := availablePeers(ctx, root)
	if err != nil {
		return nil, err
	}
	figs := make([]*peerFigures, len(peers))
	for i := range figs {
		figs[i] = &peerFigures{}
	}
	for r := range *peerRounds {
		for k := range peers {
			i := (k + r) % len(peers)
			if err := peerRound(ctx, root, peers[i], figs[i]); err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", peers[i].Name(), r+1, err)
			}
		}
	}
	return peerRows(peers, figs, missing), nil
}

// peerRound is one trial of p: a start measured through status, edits and
// a clean stop, then a start measured through the owner's SIGKILL.
func peerRound(ctx context.Context, root string, p peer, f *peerFigures) error {
	for _, life := range []func(context.Context, *peerTrial, peer, *peerFigures) error{peerLife, peerKill} {
		t, err := newPeerTrial(root)
		if err != nil {
			return err
		}
		err = life(ctx, t, p, f)
		if err != nil {
			if pid, e := p.Owner(); e == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			err = errors.Join(err, p.Close())
		}
		if n := t.leftovers(2 * time.Second); n > 0 {
			err = errors.Join(err, fmt.Errorf("%d processes of the trial left 2s after it (killed now)", n))
		}
		t.fifo.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// startMeasured starts p on t and returns the time until every unit runs,
// and their pids.
func startMeasured(ctx context.Context, t *peerTrial, p peer) (time.Duration, []int, error) {
	t0 := time.Now()
	if err := p.Start(ctx, t); err != nil {
		return 0, nil, err
	}
	pids, err := t.waitRunning(ctx)
	return time.Since(t0), pids, err
}

// peerLife measures start, status, edits and the clean stop of p on t.
func peerLife(ctx context.Context, t *peerTrial, p peer, f *peerFigures) error {
	d, _, err := startMeasured(ctx, t, p)
	if err != nil {
		return err
	}
	f.start = append(f.start, d)
	if err := t.fifo.wait(ctx, 0); err != nil {
		return err
	}
	for range peerStatusN {
		t0 := time.Now()
		if err := p.Status(ctx); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		f.status = append(f.status, time.Since(t0))
	}
	for gen := 1; gen <= peerEditN; gen++ {
		d, err := async(ctx, func() error { return p.Edit(ctx, gen) }, func() error { return t.fifo.wait(ctx, gen) })
		if err != nil {
			return fmt.Errorf("edit %d: %w", gen, err)
		}
		f.edit = append(f.edit, d)
	}
	pids, err := t.waitRunning(ctx)
	if err != nil {
		return err
	}
	ex, err := openExits(pids)
	if err != nil {
		return err
	}
	defer ex.close()
	d, err = async(ctx, func() error { return p.Stop(ctx) }, func() error {
		if left, err := ex.wait(peerWait); err != nil || left > 0 {
			return errors.Join(err, fmt.Errorf("%d units still running %v after the stop", left, peerWait))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clean stop: %w", err)
	}
	f.stop = append(f.stop, d)
	return p.Close()
}

// async runs ask (a command that may outlast what it causes) beside the
// clock and returns the time until done returned; ask's error is waited
// for after.
func async(ctx context.Context, ask, done func() error) (time.Duration, error) {
	errc := make(chan error, 1)
	t0 := time.Now()
	go func() { errc <- ask() }() // joined below
	err := done()
	took := time.Since(t0)
	return took, errors.Join(err, <-errc)
}

// peerKill starts p on t and measures its owner's SIGKILL: the time until
// every unit exited, or how many still run peerKilled after.
func peerKill(ctx context.Context, t *peerTrial, p peer, f *peerFigures) error {
	d, pids, err := startMeasured(ctx, t, p)
	if err != nil {
		return err
	}
	f.start = append(f.start, d)
	owner, err := p.Owner()
	if err != nil {
		return err
	}
	ex, err := openExits(pids)
	if err != nil {
		return err
	}
	defer ex.close()
	t0 := time.Now()
	if err := syscall.Kill(owner, syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL of the owner %d: %w", owner, err)
	}
	left, err := ex.wait(peerKilled)
	took := time.Since(t0)
	if err != nil {
		return err
	}
	if left == 0 {
		f.kill = append(f.kill, took)
	}
	f.survivors = append(f.survivors, left)
	// The survivors are the figure; now they go, by their pidfds.
	ex.kill()
	if n, err := ex.wait(5 * time.Second); err != nil || n > 0 {
		return errors.Join(err, fmt.Errorf("%d units still running 5s after their SIGKILL", n))
	}
	return p.Close()
}

// peerRows are the section's rows: per operation, hermesd's figure, then
// each peer's with its ratio to hermesd's median.
func peerRows(peers []peer, figs []*peerFigures, missing []string) []Row {
	var rows []Row
	for _, op := range peerOps {
		base := figs[0].samples(op)
		for i, p := range peers {
			rows = append(rows, Row{
				Figure: fmt.Sprintf("peers: %s, %s", op, p.Name()),
				Value:  peerValue(op, figs[i], base, i == 0),
				Method: peerMethod(op, p),
			})
		}
	}
	for _, m := range missing {
		rows = append(rows, Row{Figure: "peers: " + strings.Fields(m)[0], Value: "not measured", Method: "not on PATH: " + m})
	}
	return rows
}

func peerValue(op string, f *peerFigures, base []time.Duration, isBase bool) string {
	ds := f.samples(op)
	var v string
	if op == "owner SIGKILL" {
		alive := 0
		for _, n := range f.survivors {
			alive += n
		}
		if alive > 0 {
			v = fmt.Sprintf("units outlive it: %d of %d still running %v after the SIGKILL, over %d trials; ", alive, peerUnits*len(f.survivors), peerKilled, len(f.survivors))
		}
		if len(ds) == 0 {
			return v + "no trial had every unit gone"
		}
	}
	med := percentile(ds, 0.5)
	tn, tv := tail(ds)
	v += fmt.Sprintf("median %v, %s %v over %d trials", roundDur(med), tn, roundDur(tv), len(ds))
	if !isBase && len(base) > 0 {
		v += fmt.Sprintf("; %.2f× hermesd's median", float64(med)/float64(percentile(base, 0.5)))
	}
	return v
}

func peerMethod(op string, p peer) string {
	switch op {
	case "start":
		return fmt.Sprintf("%d idle `sleep` units, fresh config dir; clock from starting %s to every unit's sleep seen running (/proc scanned every %v); two starts per round", peerUnits, p.Name(), peerPoll)
	case "clean stop":
		return fmt.Sprintf("%s; clock to the exit of the last of the %d units (pidfds, poll(2)), the manager's exit checked after", p.Describe("stop"), peerUnits)
	case "status":
		return fmt.Sprintf("%s with %d units running; clock from exec to exit, %d per round", p.Describe("status"), peerUnits, peerStatusN)
	case "edit → restart":
		return fmt.Sprintf("%s; clock to the new process's line on a FIFO, %d per round", p.Describe("edit"), peerEditN)
	}
	return fmt.Sprintf("kill(2) SIGKILL of %s (%s); clock to the exit of the last of the %d units (pidfds), given up after %v", p.Name(), p.Describe("owner"), peerUnits, peerKilled)
}
