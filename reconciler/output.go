package reconciler

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/logfile"
)

// output is where a run's stdout and stderr go: the log file itself, or
// the write ends of two pipes whose read ends copiers drain into it.
type output struct {
	stdout, stderr *os.File
	// writeEnds are the pipes' write ends, closed by started once the
	// child holds its own copies; nil when the child writes the file.
	writeEnds []*os.File
	// copy starts the copiers (started); nil when the child writes the file.
	copy func()
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
	if o.copy != nil {
		o.copy()
	}
}

// logOutput is where u's next run writes (Run's goroutine, before the
// spawn). Without Options.StampOutput every unit writes its log file f
// directly. A survivor (adoptable under a gateway, persist_on_release)
// always does: it must outlive hermesd, so never into
// a pipe whose reader can die (SPEC §3), and its lines carry no time but
// what the program prints. Any other unit writes into two pipes, stdout
// and stderr, which copiers started here drain into f, one record per line
// with the time hermesd read it (logfile.Copy), until the run's last
// process closes them, or Run has ended (the unit was released, or a
// process outlives its stop). The copiers hold their own copy of f.
//
// The price, and why it is a choice: an owned process that outlives
// hermesd (a group released with `hermesctl release`, or orphans of a
// hermesd killed together with its supervisor) writes into a pipe nobody
// reads: its output is lost, and a program that does not ignore SIGPIPE
// dies of its next write.
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
	ctx, name := r.base, u.spec.Name
	streams := []logfile.Stream{logfile.Stdout, logfile.Stderr}
	out.copy = func() {
		left := make(chan struct{}, len(reads))
		for i, pr := range reads {
			r.wg.Go(func() {
				defer func() { left <- struct{}{} }()
				defer pr.Close()
				if err := logfile.Copy(ctx, dst, pr, streams[i], nil); err != nil {
					r.log.Warn("unit output lost: the log file could not be written", "unit", name, "stream", streams[i], "err", err)
				}
			})
		}
		r.wg.Go(func() {
			for range reads {
				<-left
			}
			dst.Close()
		})
	}
	return out, nil
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
