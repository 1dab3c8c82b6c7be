package reconciler

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

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
// The copiers hold their own copy of f.
//
// What is left: an owned group whose hermesd and death supervisor are
// both killed (SIGKILL to both) lives on writing into pipes nobody reads:
// its output is lost, and a program that does not ignore SIGPIPE dies of
// its next write. The next gateway ends such a group when it starts its
// unit again.
func (r *Reconciler) logOutput(u *unit, f *os.File) (output, error) {
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
	dst, err := dupFile(f)
	if err != nil {
		return fail(err)
	}
	out.stdout, out.stderr = out.writeEnds[0], out.writeEnds[1]
	out.copying = &copying{r: r, unit: u.spec.Name, reads: [2]*os.File{reads[0], reads[1]}, dst: dst}
	return out, nil
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
	dst   *os.File

	// Set by start, read by handOver after done (Run's goroutine).
	hand    context.CancelFunc // ends the copiers for a handover
	handing context.Context    // hand's context
	done    chan struct{}      // closed once both copiers returned and the closer is through
	// Set by the closer before done is closed.
	left    bool    // the files are still open: a copier was handed over
	stopped [2]bool // copier i returned at its pipe's end (or a read error), not handed over
}

// start starts the copiers of the streams not yet at their end.
func (c *copying) start() {
	// Not below r.base: hermesd's stop drains the pipes, it hands nothing over.
	c.handing, c.hand = context.WithCancel(context.WithoutCancel(c.r.base))
	c.done = make(chan struct{})
	c.left = false
	ctx, handing, r := c.r.base, c.handing, c.r
	var handed [2]bool
	var stopped [2]bool
	fin := make(chan struct{}, 2)
	for i, pr := range c.reads {
		if c.stopped[i] {
			stopped[i] = true
			fin <- struct{}{}
			continue
		}
		r.wg.Go(func() {
			defer func() { fin <- struct{}{} }()
			h, err := logfile.CopyUntil(ctx, handing, c.dst, pr, streams[i], nil)
			handed[i], stopped[i] = h, !h
			if err != nil {
				r.log.Warn("unit output lost: the log file could not be written", "unit", c.unit, "stream", streams[i], "err", err)
			}
		})
	}
	r.wg.Go(func() {
		<-fin
		<-fin
		c.stopped = stopped
		if handed[0] || handed[1] {
			c.left = true
		} else {
			c.closeFiles()
		}
		close(c.done)
	})
}

func (c *copying) closeFiles() {
	c.reads[0].Close()
	c.reads[1].Close()
	c.dst.Close()
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
// and log file, reading what the copiers left in the pipes. No byte is
// read twice and none is dropped. When the relay does not start, the
// copiers resume and the error says why. A copy whose pipes are both at
// their end has nothing to hand over.
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
	if err := r.opt.Relay(context.WithoutCancel(ctx), c.unit, c.reads[0], c.reads[1], c.dst); err != nil {
		c.start()
		return err
	}
	c.closeFiles()
	return nil
}

// dupFile is a copy of f that is closed apart from it.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup *os.File
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			derr = err
			return
		}
		dup = os.NewFile(uintptr(nfd), f.Name())
	}); err != nil {
		return nil, err
	}
	return dup, derr
}
