package supervisor

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// script is the death supervisor, run by /bin/sh. See supervisor.sh for the
// protocol; line builds its lines.
//
//go:embed supervisor.sh
var script string

// maxLine is the longest protocol line the script accepts, newline excluded.
const maxLine = 256

// Shell runs the supervisor script. It must be a POSIX sh (dash is the
// reference).
const Shell = "/bin/sh"

// regLine formats the registration of id: "R ID PGID LEADER START KEY CGROUP".
// pgid 0 registers a cgroup alone (before its first process exists); start 0
// means there is no leader whose identity to check. It returns ErrLine when
// the line would be longer than maxLine.
func regLine(id string, r *reg) ([]byte, error) {
	key, cg := r.key, r.g.Cgroup
	if key == "" {
		key = "-"
	}
	if cg == "" {
		cg = "-"
	}
	l := fmt.Sprintf("R %s %d %d %d %s %s", id, r.g.PGID, r.g.Leader.PID, r.g.Leader.StartTime, key, cg)
	if len(l) > maxLine {
		return nil, fmt.Errorf("registration of %s is %d bytes: %w", id, len(l), ErrLine)
	}
	return []byte(l + "\n"), nil
}

func unregLine(id string) []byte { return []byte("U " + id + "\n") }

// deathPipe is the owner's side of one running supervisor: the write end of
// the death pipe and the process reading it.
type deathPipe interface {
	// Write sends complete lines in one write (each ≤ PIPE_BUF, so atomic).
	Write(b []byte) error
	// Close closes the write end: the supervisor sees EOF, kills what is
	// registered and exits. Close is idempotent.
	Close() error
	// Exited is closed once the supervisor has exited and been reaped.
	Exited() <-chan struct{}
	PID() int
}

// launcher starts a supervisor. The real one is startShell; tests of the
// owner's timing logic use a fake.
type launcher func(grace time.Duration, ownerPGID int, cgBase, cgOwn string) (deathPipe, error)

// shellPipe is a supervisor run by /bin/sh.
type shellPipe struct {
	w      *os.File
	cmd    *exec.Cmd
	exited chan struct{}
	status unix.WaitStatus // set before exited is closed
	once   sync.Once
	mu     sync.Mutex // serialises writes and Close
}

// startShell starts the supervisor script in its own session with the read
// end of a fresh pipe on its stdin. The write end stays in the owner only:
// os.Pipe opens both ends close-on-exec, and the script receives the read
// end alone, so no child ever holds a write end and EOF comes exactly when
// the owner's last write end closes, by any death.
func startShell(grace time.Duration, ownerPGID int, cgBase, cgOwn string) (deathPipe, error) {
	if cgBase == "" {
		cgBase, cgOwn = "-", "-"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervisor pipe: %w", err)
	}
	cmd := exec.Command(Shell, "-c", script, "hermes-supervisor",
		strconv.FormatInt(grace.Milliseconds(), 10), strconv.Itoa(ownerPGID), cgBase, cgOwn)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
	// detached-spawn: ok — the death supervisor runs in its own session so
	// that terminal signals aimed at the owner's group never reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start supervisor %s: %w", Shell, err)
	}
	r.Close()
	p := &shellPipe{w: w, cmd: cmd, exited: make(chan struct{})}
	go func() { // joined by whoever waits on Exited
		p.status, _ = reapChild(cmd.Process.Pid)
		close(p.exited)
	}()
	return p, nil
}

func (p *shellPipe) Write(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(b)
	if err != nil {
		return fmt.Errorf("write to supervisor %d: %w", p.PID(), err)
	}
	return nil
}

func (p *shellPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	p.once.Do(func() { err = p.w.Close() })
	return err
}

func (p *shellPipe) Exited() <-chan struct{} { return p.exited }

// killed reports whether the supervisor was killed by a signal (a kill,
// the OOM killer), not exited by itself. Valid once Exited is closed.
func (p *shellPipe) killed() bool { return p.status.Signaled() }
func (p *shellPipe) PID() int     { return p.cmd.Process.Pid }
