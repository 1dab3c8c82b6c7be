package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// The peers section (make bench-peers, not in CI) and the scale section
// (make bench) run the same operations against hermesd, in each
// containment mode, against the floor (one sh that starts every unit), and
// with -peers against each other process manager found on PATH, in the
// same run, interleaved round by round (the order rotates each round), at
// each number of units of -sizes in turn. They print each manager's
// medians with their cost per unit: hermesd's with their ratio to
// process-compose and to the floor, the others' with their ratio to
// hermesd. Every manager runs its units on configuration written into a
// fresh temporary directory, and every unit is `sleep 100000 TAG` (unit 0
// reaches it through `sh -c`, after writing its generation to a FIFO), so
// that one /proc scan finds the units of any manager by TAG.
//
// A manager's trial: start, its memory, status peerStatusN times, edit
// unit 0 peerEditN times, a clean stop and the manager's exit; then a
// second start and SIGKILL of the process that owns the units. After
// each, nothing of the trial may be left: a process carrying the trial's
// environment tag or unit tags is killed and reported as an error
// (survivors of the SIGKILL row are its figure, and are killed after it
// is read).

var (
	peersOnly  = flag.Bool("peers", false, "run only the peers section: hermesd against supervisord, pm2 and process-compose where on PATH (make bench-peers)")
	peerRounds = flag.Int("peer-rounds", 5, "peers section: rounds, each a trial of every manager")
)

const (
	peerStatusN = 5
	peerEditN   = 5
	envPeerTag  = "BENCH_PEER"     // in every manager's environment: finds what a trial leaves
	peerSleepS  = "100000"         // every unit's first sleep argument
	peerMarkGen = "BENCH_PEER_GEN" // unit 0's generation, in its environment
)

// The waits of one size of trial, set by setPeerSize: a manager that
// starts 5000 units needs longer than one that starts 100, and scanning
// /proc for 5000 units every 2 ms would take the CPU the managers need.
var (
	peerUnits  = 100
	peerWait   = 60 * time.Second     // for units to run, a stop, an edit
	peerKilled = 2 * time.Second      // how long the units may take to go after their owner's SIGKILL
	peerPoll   = 2 * time.Millisecond // /proc scans while waiting for units
)

// setPeerSize sets the number of units of the next trials and the waits
// that grow with it.
func setPeerSize(n int) {
	peerUnits = n
	peerWait = 60*time.Second + time.Duration(n)*100*time.Millisecond
	// 4 ms a unit: a kill of every unit at 1.5 times the per-unit cost
	// measured at 100 units on a loaded machine (about 4 ms) is timed,
	// not cut off and reported as survivors.
	peerKilled = 2*time.Second + time.Duration(n)*4*time.Millisecond
	peerPoll = 2*time.Millisecond + time.Duration(n)*20*time.Microsecond
}

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
	// Describe says how the rows are played with this manager.
	Describe() played
}

// played is how one manager's rows are played, for their Method: the
// clean stop, the status and edit commands, and what the owner is.
type played struct{ stop, status, edit, owner string }

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
// returns their pids. A manager p that is gone meanwhile (crashed) ends
// the wait at once.
func (t *peerTrial) waitRunning(ctx context.Context, p peer) ([]int, error) {
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
		} else if c, ok := p.(interface{ gone() error }); ok {
			if err := c.gone(); err != nil {
				return nil, fmt.Errorf("%d of %d units running when %s %w", len(r), len(t.tags), p.Name(), err)
			}
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
	out := slices.Collect(maps.Values(t.running()))
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

// peerFigures are one manager's samples at one size.
type peerFigures struct {
	start, stop, exit, status, edit, kill []time.Duration
	survivors                             []int // units still running peerKilled after each SIGKILL of their owner
	rssKB, supPssKB                       []int // the manager's RSS, its supervisor's PSS, with every unit running
	// failed is the error of a peer's trial at this size (a peer that
	// crashed, or did not run every unit): its rows are that, and its
	// other trials at this size are not played. hermesd's failures end
	// the bench instead.
	failed error
}

// peerOps name the timed rows, in the table's order.
var peerOps = []string{"start", "clean stop", "SIGTERM → manager exited", "status", "edit → restart", "owner SIGKILL"}

func (f *peerFigures) samples(op string) []time.Duration {
	return map[string][]time.Duration{"start": f.start, "clean stop": f.stop, "SIGTERM → manager exited": f.exit,
		"status": f.status, "edit → restart": f.edit, "owner SIGKILL": f.kill}[op]
}

// partial is a peer that plays only some operations: the floor has no
// status, no edit and no owner whose death means anything.
type partial interface{ Plays(op string) bool }

func plays(p peer, op string) bool {
	if l, ok := p.(partial); ok {
		return l.Plays(op)
	}
	return true
}

// supervised is a peer with a death supervisor of its own, whose PSS is
// a row of its own.
type supervised interface{ SupervisorPid() (int, error) }

// availablePeers are hermesd (in each containment mode this machine
// offers) and the floor, then, with all, the managers found on PATH; the
// names of those not found are returned apart.
func availablePeers(ctx context.Context, dir string, all bool) (peers []peer, missing []string, err error) {
	hs, err := newHermesPeers(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range hs {
		peers = append(peers, h)
	}
	peers = append(peers, &floorPeer{})
	if !all {
		return peers, nil, nil
	}
	if p, err := newProcessComposePeer(); err == nil {
		peers = append(peers, p)
	} else {
		missing = append(missing, "process-compose (not on PATH; tools/bench/build-process-compose.sh builds it from its source)")
	}
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
	return peers, missing, nil
}

// sizes parses -sizes, or returns def.
func sizes(def string) ([]int, error) {
	s := *peerSizes
	if s == "" {
		s = def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sizes: %q is not a number of units", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// roundsAt is the rounds of trials at n units: -peer-rounds up to 100
// units, fewer above (a trial of 5000 units takes minutes), at least one.
func roundsAt(n int) int {
	return max(1, min(*peerRounds, *peerRounds*200/n))
}

func benchPeers(ctx context.Context, root string) ([]Row, error) {
	return comparePeers(ctx, root, "100", true)
}

// benchScale is the scale table of make bench: hermesd and the floor at
// 10 to 5000 units.
func benchScale(ctx context.Context, root string) ([]Row, error) {
	return comparePeers(ctx, root, "10,100,1000,5000", false)
}

// comparePeers runs every size in turn: at each, rounds of trials of every
// peer, interleaved, then that size's rows; the trials' directories are
// under root.
func comparePeers(ctx context.Context, root, defSizes string, all bool) ([]Row, error) {
	ns, err := sizes(defSizes)
	if err != nil {
		return nil, err
	}
	peers, missing, err := availablePeers(ctx, root, all)
	if err != nil {
		return nil, err
	}
	var rows []Row
	kills := map[string]*killScale{}
	for _, n := range ns {
		setPeerSize(n)
		figs := make([]*peerFigures, len(peers))
		for i := range figs {
			figs[i] = &peerFigures{}
		}
		for r := range roundsAt(n) {
			for k := range peers {
				i := (k + r) % len(peers)
				if figs[i].failed != nil {
					continue
				}
				if err := peerRound(ctx, root, peers[i], figs[i]); err != nil {
					err = fmt.Errorf("%s, %d units, round %d: %w", peers[i].Name(), n, r+1, err)
					if isHermes(peers[i]) || ctx.Err() != nil {
						return rows, err
					}
					figs[i].failed = err
				}
			}
		}
		rows = append(rows, peerRows(peers, figs)...)
		for i, p := range peers {
			if isHermes(p) {
				rows = append(rows, killScaleRow(kills, p.Name(), n, figs[i].kill)...)
			}
		}
	}
	for _, m := range missing {
		rows = append(rows, Row{Figure: "peers: " + strings.Fields(m)[0], Value: "not measured", Method: "not on PATH: " + m})
	}
	return rows, nil
}

// peerRound is one trial of p: a start measured through status, edits and
// a clean stop, then a start measured through the owner's SIGKILL.
func peerRound(ctx context.Context, root string, p peer, f *peerFigures) error {
	lives := []func(context.Context, *peerTrial, peer, *peerFigures) error{peerLife}
	if plays(p, "owner SIGKILL") {
		lives = append(lives, peerKill)
	}
	for _, life := range lives {
		t, err := newPeerTrial(root)
		if err != nil {
			return err
		}
		if err := endTrial(t, p, life(ctx, t, p, f)); err != nil {
			return err
		}
	}
	return nil
}

// endTrial ends the trial t of p, whose play returned err: after an error
// p's owner is killed and p closed; the processes of t still there 2 s
// after are killed, an error. It returns err with what went wrong here.
func endTrial(t *peerTrial, p peer, err error) error {
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
	return err
}

// startMeasured starts p on t, records the time until every unit runs
// (f.start), and returns their pids.
func startMeasured(ctx context.Context, t *peerTrial, p peer, f *peerFigures) ([]int, error) {
	t0 := time.Now()
	if err := p.Start(ctx, t); err != nil {
		return nil, err
	}
	pids, err := t.waitRunning(ctx, p)
	if err == nil {
		f.start = append(f.start, time.Since(t0))
	}
	return pids, err
}

// peerLife measures start, memory, status, edits, the clean stop of p on
// t and the manager's exit after it.
func peerLife(ctx context.Context, t *peerTrial, p peer, f *peerFigures) error {
	if _, err := startMeasured(ctx, t, p, f); err != nil {
		return err
	}
	if err := t.fifo.wait(ctx, 0); err != nil {
		return err
	}
	if err := sampleMemory(p, f); err != nil {
		return err
	}
	for range peerStatusN {
		if !plays(p, "status") {
			break
		}
		t0 := time.Now()
		if err := p.Status(ctx); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		f.status = append(f.status, time.Since(t0))
	}
	for gen := 1; gen <= peerEditN && plays(p, "edit"); gen++ {
		d, err := async(ctx, func() error { return p.Edit(ctx, gen) }, func() error { return t.fifo.wait(ctx, gen) })
		if err != nil {
			return fmt.Errorf("edit %d: %w", gen, err)
		}
		f.edit = append(f.edit, d)
	}
	return stopMeasured(ctx, t, p, f)
}

// stopMeasured asks p for a clean stop and records the time until the
// last unit exited, and until the manager itself exited.
func stopMeasured(ctx context.Context, t *peerTrial, p peer, f *peerFigures) error {
	ex, err := exitsOf(t.waitRunning(ctx, p))
	if err != nil {
		return err
	}
	defer ex.close()
	t0 := time.Now()
	d, err := async(ctx, func() error { return p.Stop(ctx) }, func() error {
		if left, err := ex.wait(peerWait); err != nil || left > 0 {
			return errors.Join(err, fmt.Errorf("%d units still running %v after the stop", left, peerWait))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("clean stop: %w", err)
	}
	f.stop = append(f.stop, d)
	if err := p.Close(); err != nil {
		return err
	}
	f.exit = append(f.exit, time.Since(t0))
	return nil
}

// sampleMemory reads the manager's RSS and its supervisor's PSS, with
// every unit running.
func sampleMemory(p peer, f *peerFigures) error {
	if !plays(p, "memory") {
		return nil
	}
	m, err := memOf(p.Owner, p.Name())
	if err != nil {
		return err
	}
	f.rssKB = append(f.rssKB, m.rss)
	if s, ok := p.(supervised); ok {
		m, err := memOf(s.SupervisorPid, p.Name()+"'s supervisor")
		if err != nil {
			return err
		}
		f.supPssKB = append(f.supPssKB, m.pss)
	}
	return nil
}

// memOf reads the memory of the process that pid finds; whose names it
// in the error.
func memOf(pid func() (int, error), whose string) (memSample, error) {
	n, err := pid()
	if err != nil {
		return memSample{}, err
	}
	m, err := readMem(n)
	if err != nil {
		return m, fmt.Errorf("memory of %s: %w", whose, err)
	}
	return m, nil
}

// exitsOf opens the exits of the running units pids, as a wait for them
// returned them (or its error).
func exitsOf(pids []int, err error) (*exitSet, error) {
	if err != nil {
		return nil, err
	}
	return openExits(pids)
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
	ex, err := exitsOf(startMeasured(ctx, t, p, f))
	if err != nil {
		return err
	}
	defer ex.close()
	owner, err := p.Owner()
	if err != nil {
		return err
	}
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

// killScale is a hermesd peer's owner-SIGKILL cost per unit at the first
// size of at least 100 units it was measured at, which the larger sizes
// compare with (issue 28: within 1.5× of it).
type killScale struct {
	n       int
	perUnit float64 // median ns per unit
}

// killScaleRow is the row of hermesd peer name at n units: its median
// owner-SIGKILL time per unit as a ratio to that at the base size; none
// at the base size itself, below 100 units, or without samples.
func killScaleRow(kills map[string]*killScale, name string, n int, ds []time.Duration) []Row {
	if n < 100 || len(ds) == 0 {
		return nil
	}
	per := float64(percentile(ds, 0.5)) / float64(n)
	base := kills[name]
	if base == nil {
		kills[name] = &killScale{n: n, perUnit: per}
		return nil
	}
	return []Row{{
		Figure: fmt.Sprintf("%d units: owner SIGKILL per unit against %d units, %s", n, base.n, name),
		Value:  fmt.Sprintf("%.2f× (%v against %v per unit; target ≤ 1.5×)", per/base.perUnit, time.Duration(per).Round(time.Microsecond), time.Duration(base.perUnit).Round(time.Microsecond)),
		Method: fmt.Sprintf("the medians of the owner SIGKILL rows at %d and %d units (the same run), each divided by its number of units", n, base.n),
	}}
}
