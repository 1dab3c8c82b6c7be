package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/logfile"
)

// The log relay. An owned unit's stdout and stderr are pipes that hermesd
// copies into its log file, one stamped record a line (reconciler
// Options.StampOutput). When such a unit's group is released (`hermesctl
// release`, the control API's release), it may outlive hermesd, and must
// not write into pipes nobody reads then (lost output, SIGPIPE): hermesd
// hands the pipes' read ends and the log file to a relay, hermesd's own
// binary run again with the hidden first argument relayArg, which copies
// on exactly as hermesd did (logfile.Copy) until the released group's last
// writer closes the pipes, and then exits.
//
// The relay is hermesd's child in hermesd's session but in a process group
// of its own: the death supervisor ends registered groups and what
// descends from their members, never hermesd's children in its session
// (supervisor: a plain child of the owner), nor hermesd's group; it is in
// hermesd's cgroup, not in the owner's subtree that cgroup mode kills. It
// carries no environment (no ledger tags, so no owner's sweep takes it)
// and its standard streams are /dev/null, so that nothing attributes it to
// the unit by the files it holds. It ignores SIGHUP and SIGINT (a terminal
// hermesd was started from); TERM ends it after a last drain of the pipes.

// relayArg, as hermesd's first argument, makes it a log relay: relayArg
// UNIT, with the pipes and the log on relayFDs.
const relayArg = "--log-relay"

// The relay's descriptors: the read ends of the unit's stdout and stderr
// pipes, its log file (O_APPEND), and the write end of a pipe on which it
// says it is ready, once it holds the others and before it reads.
const (
	relayStdout = 3 + iota
	relayStderr
	relayLog
	relayReady
)

// streams are the relay's pipes' streams, in the order of their descriptors.
var streams = [2]logfile.Stream{logfile.Stdout, logfile.Stderr}

// relayReadyWait bounds the wait for a relay's word that it runs.
const relayReadyWait = 10 * time.Second

// startRelay starts a relay for unit's pipes and log file
// (reconciler.RelayFunc) and returns once it said it is ready: it holds
// its own copies of the three files then. On an error no relay runs.
//
// The relay is forked with syscall.ForkExec on duplicates of the files'
// descriptors: os/exec would put the pipes into blocking mode (a
// file's Fd does), which their description shares with hermesd's copies,
// whose copiers resume on them when the relay fails.
func startRelay(ctx context.Context, unit string, stdout, stderr, log *os.File) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("log relay: find hermesd's executable: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("log relay: %w", err)
	}
	defer null.Close()
	rr, rw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("log relay: %w", err)
	}
	defer rr.Close()
	fds, err := dupFDs(null, null, null, stdout, stderr, log, rw)
	rw.Close()
	if err != nil {
		return fmt.Errorf("log relay: %w", err)
	}
	defer closeFDs(fds)
	pid, err := syscall.ForkExec(exe, []string{exe, relayArg, unit}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: fds,
		// detached-spawn: ok — the relay must outlive hermesd and its death supervisor: a group of its own in hermesd's session (see the relay's doc above)
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fmt.Errorf("log relay: start %s: %w", exe, err)
	}
	closeFDs(fds)
	fds = nil
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("log relay: pid %d: %w", pid, err)
	}
	// Reaps the relay when it exits. It may outlive hermesd: nothing
	// joins this goroutine, which ends with the relay or with hermesd.
	go p.Wait()
	if err := awaitReady(ctx, rr); err != nil {
		p.Kill() // our child, still unreaped: its pid names it
		return fmt.Errorf("log relay (pid %d): %w", pid, err)
	}
	return nil
}

// awaitReady reads the relay's word on r: "ready", within relayReadyWait.
func awaitReady(ctx context.Context, r *os.File) error {
	deadline := time.Now().Add(relayReadyWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = r.SetReadDeadline(deadline)
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	switch {
	case string(buf[:n]) == "ready\n":
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("not ready within %v", relayReadyWait)
	case err != nil:
		return fmt.Errorf("exited before it was ready (%w)", err)
	}
	return fmt.Errorf("said %q, want ready", buf[:n])
}

// dupFDs duplicates the descriptors of fs (close-on-exec: ForkExec moves
// them to their places in the child) without touching the files' modes.
func dupFDs(fs ...*os.File) ([]uintptr, error) {
	var out []uintptr
	for _, f := range fs {
		rc, err := f.SyscallConn()
		if err != nil {
			closeFDs(out)
			return nil, err
		}
		var derr error
		if err := rc.Control(func(fd uintptr) {
			var nfd int
			nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
			if derr == nil {
				out = append(out, uintptr(nfd))
			}
		}); err != nil || derr != nil {
			closeFDs(out)
			return nil, errors.Join(err, derr)
		}
	}
	return out, nil
}

func closeFDs(fds []uintptr) {
	for _, fd := range fds {
		unix.Close(int(fd))
	}
}

// runRelay is hermesd as a log relay (relayArg): it checks its
// descriptors, says it is ready, and copies each pipe into the log until
// the pipe's last writer closes it. TERM ends it after a drain. args are
// the unit's name.
func runRelay(args []string) error {
	if len(args) != 1 {
		return exit(exitcode.Usage, fmt.Errorf("%s takes a unit's name: it is hermesd's own, started with a released unit's output", relayArg))
	}
	unit := args[0]
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	files, err := relayFiles()
	if err != nil {
		return exit(exitcode.Usage, fmt.Errorf("log relay for %s: %w; it is hermesd's own, started with a released unit's output", unit, err))
	}
	ready := os.NewFile(relayReady, "ready")
	_, err = ready.WriteString("ready\n")
	ready.Close()
	if err != nil {
		return exit(exitcode.Failure, fmt.Errorf("log relay for %s: %w", unit, err))
	}
	log := files[2]
	defer log.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range streams {
		wg.Go(func() {
			defer files[i].Close()
			errs[i] = logfile.Copy(ctx, log, files[i], s, nil)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return exit(exitcode.Failure, fmt.Errorf("log relay for %s: %w", unit, err))
	}
	return nil
}

// relayFiles are the relay's pipes (read ends, made non-blocking so that
// Copy's read deadlines work) and its log file, checked to be what they
// must be.
func relayFiles() ([3]*os.File, error) {
	var out [3]*os.File
	want := map[int]uint32{relayStdout: unix.S_IFIFO, relayStderr: unix.S_IFIFO, relayLog: unix.S_IFREG, relayReady: unix.S_IFIFO}
	for _, fd := range []int{relayStdout, relayStderr, relayLog, relayReady} {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return out, fmt.Errorf("descriptor %d: %w", fd, err)
		}
		if uint32(st.Mode)&unix.S_IFMT != want[fd] {
			return out, fmt.Errorf("descriptor %d is not a %s", fd, map[uint32]string{unix.S_IFIFO: "pipe", unix.S_IFREG: "regular file"}[want[fd]])
		}
	}
	for i, fd := range []int{relayStdout, relayStderr} {
		if err := unix.SetNonblock(fd, true); err != nil {
			return out, fmt.Errorf("descriptor %d: %w", fd, err)
		}
		out[i] = os.NewFile(uintptr(fd), string(streams[i]))
	}
	out[2] = os.NewFile(relayLog, "log")
	return out, nil
}
