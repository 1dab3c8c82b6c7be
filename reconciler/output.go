package reconciler

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/logfile"
)

// output is where a run's stdout and stderr go: the log file itself, or
// the write ends of two pipes whose read ends copiers drain into it.
type output struct {
	stdout, stderr *os.File
	// writeEnds are the pipes' write ends, closed by started once the
	// child holds its own copies; nil when the child writes the file.
	writeEnds []*os.File
	// copying drains the pipes (started starts it); nil when the child
	// writes the file.
	copying *copying
}

// started closes hermesd's copies of the pipes' write ends once the spawn
// is over (done or failed), so that the copiers see EOF when the run's
// last process closes its own, and starts the copiers. They start after
// the spawn, not before: until then nothing has been written, and a
// reader blocked on a pipe while the spawn waits would keep a test's
// synctest clock from moving.
func (o output) started() {
	for _, f := range o.writeEnds {
		f.Close()
	}
	if o.copying != nil {
		o.copying.start()
	}
}

// logOutput is where u's next run writes (Run's goroutine, before the
// spawn). Without Options.StampOutput every unit writes its log file f
// directly. A survivor (adoptable under a gateway, persist_on_release)
// always does: it must outlive hermesd, so never into a pipe whose reader
// can die (SPEC §3), and its lines carry no time but what the program
// prints. Any other unit writes into two pipes, stdout and stderr, which
// copiers started here drain into f, one record per line with the time
// hermesd read it (logfile.CopyUntil), until the run's last process closes
// them, or Run has ended (a process outlives its stop), or the run is
// released: its copy is then handed over to a relay process
// (Options.Relay, see handOver), which outlives hermesd and writes on
// into f, so that a released group never writes into a pipe nobody reads.
// The copiers do not keep f: they open the log at path again when they
// have a line to write, and close it once idle (logSink).
//
// What is left: an owned group whose hermesd and death supervisor are
// both killed (SIGKILL to both) lives on writing into pipes nobody reads:
// its output is lost, and a program that does not ignore SIGPIPE dies of
// its next write. The next gateway ends such a group when it starts its
// unit again.
func (r *Reconciler) logOutput(u *unit, f *os.File, path string) (output, error) {
	if !r.opt.StampOutput || keeps(r.opt.Role, u.spec.Ownership) {
		return output{stdout: f, stderr: f}, nil
	}
	var out output
	var reads []*os.File
	fail := func(err error) (output, error) {
		for _, p := range append(reads, out.writeEnds...) {
			p.Close()
		}
		return output{}, err
	}
	for range 2 {
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		reads, out.writeEnds = append(reads, pr), append(out.writeEnds, pw)
	}
	out.stdout, out.stderr = out.writeEnds[0], out.writeEnds[1]
	dst := &logSink{r: r, unit: u.spec.Name, path: path}
	if u.spec.Log.MaxSize > 0 {
		dst.lim = logLimits(*u.spec)
	}
	out.copying = &copying{r: r, unit: u.spec.Name, reads: [2]*os.File{reads[0], reads[1]}, dst: dst}
	return out, nil
}

// logIdle is how long a log file its copiers write stays open after
// their last write (logSink).
const logIdle = 5 * time.Second

// MaxOpenLogs is the most log files the copiers of all runs hold open at
// once (logSink): past it, opening one closes the one opened first.
const MaxOpenLogs = 1024

// logSink is the log file of a run whose output hermesd copies, as its
// two copiers write it: opened by the write that finds it closed, the
// way the run's start opened it (Reconciler.openLog: a link at path is
// refused), and closed once no write came for logIdle, or once MaxOpenLogs
// others were opened since (logFiles). An idle unit thus holds no
// descriptor of its log, only its pipes' read ends and its pidfd: 3
// descriptors, and the units together at most MaxOpenLogs more, which
// lets thousands of units run under a descriptor limit of a few times
// their number (cmd/hermesd's fdNeed).
//
// Each Write lands whole (O_APPEND) in the file at path when it is
// made: after a rotation (in place, logfile.Rotate) in the truncated
// file, after the file was removed or renamed in a new one; each open
// gives the file to Options.Logs again, so that a new one is kept within
// its limits too. Writes and the close are under mu, so no record is
// cut or lost by a close. A failure to open or write is reported at
// once, the first of each spell of failures (reportedError), and the
// lines of a write that failed are dropped: the copier reads on
// (logfile.CopyUntil).
type logSink struct {
	r    *Reconciler
	unit string
	path string
	lim  logfile.Limits // the log's limits; MaxSize 0 when not rotated

	mu      sync.Mutex
	f       *os.File    // guarded by mu; nil while closed
	last    time.Time   // guarded by mu; the latest write
	idler   *time.Timer // guarded by mu; closes f once idle; nil before the first open
	failing bool        // guarded by mu; the latest open or write failed (and was reported)
	// at is the sink's place among r.logs' open files while f is
	// open; guarded by r.logs.mu.
	at *list.Element
}

// logFiles are the log files the sinks of all runs hold open, the
// latest opened first: the sinks open at most max at once.
type logFiles struct {
	mu      sync.Mutex
	max     int           // set by New; tests lower it before Run
	idle    time.Duration // how long a log stays open with no write; set by New, tests shorten it before Run
	open    list.List     // of *logSink; guarded by mu
	opening int           // guarded by mu; sinks given a place, opening their file
}

// place keeps a place among the open files for a sink about to open
// its file (its mu held), closing the file of the sink opened first
// while max are open or opening; opened says how the open went. A sink
// busy writing (its mu held) is passed over, and kept open if all are:
// TryLock, since the caller holds a sink's mu, and a sink holding its
// mu may wait on l.mu, never the other way round.
func (l *logFiles) place() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for e := l.open.Back(); e != nil && l.open.Len()+l.opening >= l.max; {
		v, prev := e.Value.(*logSink), e.Prev()
		if v.mu.TryLock() {
			v.closeLocked()
			v.mu.Unlock()
		}
		e = prev
	}
	l.opening++
}

// opened ends the place kept for s (s.mu held): its file is open (ok),
// or it failed to open.
func (l *logFiles) opened(s *logSink, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opening--
	if ok {
		s.at = l.open.PushFront(s)
	}
}

// closedLocked removes s, whose f was just closed (s.mu held); l.mu held.
func (l *logFiles) closedLocked(s *logSink) {
	if s.at != nil {
		l.open.Remove(s.at)
		s.at = nil
	}
}

// closeLocked closes s's file; s.mu and s.r.logs.mu held.
func (s *logSink) closeLocked() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.r.logs.closedLocked(s)
}

// release closes s's file, or forgets it when it was handed over
// (s.f nil); s.mu held.
func (s *logSink) release() {
	s.r.logs.mu.Lock()
	defer s.r.logs.mu.Unlock()
	s.closeLocked()
}

// reportedError is a failed write of a logSink, reported already.
type reportedError struct{ error }

func (e reportedError) Unwrap() error { return e.error }

func (s *logSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.openLocked(); err != nil {
		return 0, s.failLocked("the log file could not be opened", err)
	}
	s.last = time.Now()
	n, err := s.f.Write(b)
	if err != nil {
		return n, s.failLocked("the log file could not be written", err)
	}
	s.failing = false
	return n, nil
}

// openLocked opens the log unless it is open, and arms the idle close.
func (s *logSink) openLocked() error {
	if s.f != nil {
		return nil
	}
	s.r.logs.place()
	f, err := s.r.openLog(s.path)
	s.r.logs.opened(s, err == nil)
	if err != nil {
		return err
	}
	s.f = f
	if s.idler == nil {
		s.idler = time.AfterFunc(s.r.logs.idle, s.closeIdle)
	} else {
		s.idler.Reset(s.r.logs.idle)
	}
	if s.lim.MaxSize > 0 && s.r.opt.Logs != nil {
		// The file may be new (the one before was removed): have it
		// watched, and checked at once. Its inode number tells nothing,
		// a new file may get the number of the one removed.
		s.r.opt.Logs.Add(s.path, s.lim)
	}
	return nil
}

// failLocked reports err, unless the write before failed too, and marks
// it reported.
func (s *logSink) failLocked(what string, err error) error {
	if !s.failing {
		s.r.log.Warn("unit output lost: "+what, "unit", s.unit, "path", s.path, "err", err)
		s.failing = true
	}
	return reportedError{err}
}

// closeIdle closes the log once idle has passed since the latest write,
// and waits on otherwise (the idle timer's func).
func (s *logSink) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	if left := s.r.logs.idle - time.Since(s.last); left > 0 {
		s.idler.Reset(left)
		return
	}
	s.release()
}

// take hands the log over, open, to the caller, who closes it; the sink
// opens it again at its next write.
func (s *logSink) take() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.openLocked(); err != nil {
		return nil, err
	}
	f := s.f
	s.f = nil
	s.release()
	return f, nil
}

// close closes the log, once the copiers are through.
func (s *logSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idler != nil {
		s.idler.Stop()
	}
	s.release()
}

// streams are the pipes of a copying, in the order of its reads.
var streams = [2]logfile.Stream{logfile.Stdout, logfile.Stderr}

// copying is the copy of one run's stdout and stderr pipes into its log
// file: a copier goroutine for each pipe (in r.wg), and a closer that
// closes the pipes' read ends and dst once both have returned, unless
// they were handed over. Started by output.started, handed over by
// handOver, both on Run's goroutine.
type copying struct {
	r     *Reconciler
	unit  string
	reads [2]*os.File // stdout's and stderr's read ends
	dst   *logSink

	// Set by start, read by handOver after done (Run's goroutine).
	hand    context.CancelFunc // ends the copiers for a handover
	handing context.Context    // hand's context
	done    chan struct{}      // closed once both copiers returned and the closer is through
	// Set by the closer before done is closed.
	left    bool    // the files are still open: a copier was handed over
	stopped [2]bool // copier i returned at its pipe's end (or a read error), not handed over
}

// start starts the copiers of the streams not yet at their end. The
// last of them to return closes (the closer's work, finish): no goroutine
// waits for them, as thousands of units would have thousands waiting.
func (c *copying) start() {
	// Not below r.base: hermesd's stop drains the pipes, it hands nothing over.
	c.handing, c.hand = context.WithCancel(context.WithoutCancel(c.r.base))
	c.done = make(chan struct{})
	c.left = false
	ctx, handing, r := c.r.base, c.handing, c.r
	var handed [2]bool
	var stopped [2]bool
	var running atomic.Int32
	running.Store(2)
	finish := func() { // by the last copier to return, or by start when none runs
		if running.Add(-1) > 0 {
			return
		}
		c.stopped = stopped
		if handed[0] || handed[1] {
			c.left = true
		} else {
			c.closeFiles()
		}
		close(c.done)
	}
	for i, pr := range c.reads {
		if c.stopped[i] {
			stopped[i] = true
			finish()
			continue
		}
		r.wg.Go(func() {
			defer finish()
			h, err := logfile.CopyUntil(ctx, handing, c.dst, pr, streams[i], nil)
			handed[i], stopped[i] = h, !h
			if err != nil && !errors.As(err, new(reportedError)) {
				r.log.Warn("unit output lost: its pipe could not be read", "unit", c.unit, "stream", streams[i], "err", err)
			}
		})
	}
}

func (c *copying) closeFiles() {
	c.reads[0].Close()
	c.reads[1].Close()
	c.dst.close()
}

// RelayFunc starts a process that continues the copy of a released unit's
// output (Options.Relay): it is given the read ends of the unit's stdout
// and stderr pipes and its log file, reads each pipe until its last writer
// closes it (EOF), and writes every line to the log file as a record of
// the pipe's stream (logfile.Copy: the time it read it, RFC 3339 in UTC).
// The process must outlive hermesd: in no process group, session or cgroup
// that hermesd or its death supervisor ends. RelayFunc returns once the
// process holds its own copies of the files (the caller closes its
// copies then) and reads nothing before that; an error means it does not
// run.
type RelayFunc func(ctx context.Context, unit string, stdout, stderr, log *os.File) error

// errNoRelay refuses the release of a unit whose output hermesd copies
// when no relay can take the copy over.
var errNoRelay = errors.New("its output goes through hermesd (stamped logs), and this hermesd has no relay to hand it to")

// handOver hands the copy of a run's output over to a relay process
// (Run's goroutine, before the run's group is released), so that the group
// writes on into its log after hermesd is gone: the copiers stop reading
// (a line they hold unfinished is written as a partial record), and once
// they have written all they read, the relay is started on the same pipes
// and the log file, opened for it if the copiers had closed it (it is the
// relay's from then on), reading what the copiers left in the pipes. No
// byte is read twice and none is dropped. When the log cannot be opened
// or the relay does not start, the copiers resume and the error says
// why. A copy whose pipes are both at their end has nothing to hand over.
func (r *Reconciler) handOver(ctx context.Context, c *copying) error {
	if r.opt.Relay == nil {
		return fmt.Errorf("%w (%w)", errNoRelay, control.ErrRefused)
	}
	c.hand()
	// The copiers return at their next read: this wait is bounded by a
	// write of what they hold to the log file.
	<-c.done
	if !c.left {
		return nil
	}
	log, err := c.dst.take()
	if err == nil {
		err = r.opt.Relay(context.WithoutCancel(ctx), c.unit, c.reads[0], c.reads[1], log)
		log.Close()
	}
	if err != nil {
		c.start()
		return err
	}
	c.closeFiles()
	return nil
}
