package supervisor

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// script is the death supervisor, run by /bin/sh. See supervisor.sh for the
// protocol; regLine, unregLine and idleLine build its lines.
//
//go:embed supervisor.sh
var script string

// maxLine is the longest protocol line the script accepts, newline excluded.
const maxLine = 256

// Shell runs the supervisor script. It must be a POSIX sh (dash is the
// reference).
const Shell = "/bin/sh"

// RefusedError is the supervisor's refusal of a line: nothing was
// registered (or unregistered), and the group is not protected by it.
type RefusedError struct {
	PID    int    // the supervisor's
	ID     string // the registration's protocol id
	Reason string // the supervisor's words
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("supervisor %d refused registration %s: %s", e.PID, e.ID, e.Reason)
}

// Is makes errors.Is(err, ErrSupervisor) hold for a refusal.
func (e *RefusedError) Is(target error) bool { return target == ErrSupervisor }

// lostError: the answer to a line can no longer come (the supervisor
// exited, its pipe broke or was closed). What was registered is replayed to
// the next supervisor; a registration that waited is asked again.
type lostError struct{ msg string }

func (e *lostError) Error() string        { return e.msg }
func (e *lostError) Is(target error) bool { return target == ErrSupervisor }

// regLine formats the registration of id: "R ID PGID LEADER START KEY CG".
// pgid 0 registers a cgroup alone (before its first process exists); start 0
// means there is no leader whose identity to check. CG is the cgroup dir
// relative to base (the hierarchy the supervisor was started with), encoded
// by encodePath: the line never carries the base, whose path the owner does
// not choose (spaces, "..", any length). It returns ErrLine when the line
// would be longer than maxLine, and an error when the cgroup is not below
// base: neither can be carried, and neither is ever dropped silently.
func regLine(id, base string, r *reg) ([]byte, error) {
	key, cg := r.key, "-"
	if key == "" {
		key = "-"
	}
	if r.g.Cgroup != "" {
		rel, ok := below(base, r.g.Cgroup)
		if !ok {
			return nil, fmt.Errorf("registration of %s: cgroup %s is not below %s: %w", id, r.g.Cgroup, base, ErrUnsafe)
		}
		cg = encodePath(rel)
	}
	l := fmt.Sprintf("R %s %d %d %d %s %s", id, r.g.PGID, r.g.Leader.PID, r.g.Leader.StartTime, key, cg)
	if len(l) > maxLine {
		return nil, fmt.Errorf("registration of %s is %d bytes: %w", id, len(l), ErrLine)
	}
	return []byte(l + "\n"), nil
}

func unregLine(id string) []byte { return []byte("U " + id + "\n") }

// unregAllLine unregisters every group the supervisor holds.
var unregAllLine = []byte("U *\n")

// closeLine tells the supervisor that the owner closes the pipe next, at
// its clean exit: with nothing registered it exits at once; else it does
// what EOF does.
var closeLine = []byte("C\n")

// idleLine tells the supervisor that the owner closes the pipe because
// nothing is registered, not because it ends: the owner's cgroup subtree
// stays.
var idleLine = []byte("I\n")

// below returns dir relative to base when dir is strictly below it.
func below(base, dir string) (string, bool) {
	if base == "" || !filepath.IsAbs(dir) {
		return "", false
	}
	rel, err := filepath.Rel(base, filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// encodePath writes each byte of p outside [A-Za-z0-9._/-] as \0ooo, the
// octal escape that the script's printf %b decodes: a path with spaces,
// tabs, newlines or backslashes travels as one field of one line.
func encodePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, `\0%03o`, c)
	}
	return b.String()
}

// deathPipe is the owner's side of one running supervisor: the write end of
// the death pipe, the read end of its reply pipe, and the process.
//
// No method blocks: lines are queued and written by the pipe's own writer,
// so that a supervisor that does not read (stopped, swapped out) never
// holds up the caller, who may hold the owner's lock.
type deathPipe interface {
	// Send queues lines (complete, each ≤ maxLine+1 bytes) to be written
	// in order. The supervisor answers each line; reply, when not nil, is
	// called once per line with nil (accepted), a *RefusedError, or an
	// error when no answer can come (the supervisor exited, the pipe is
	// closed). reply may run before Send returns (no answer can come), or
	// later on the pipe's goroutine: it must not take the caller's locks.
	Send(lines [][]byte, reply func(i int, err error))
	// Close closes the write end once every queued line is written: the
	// supervisor sees EOF, kills what is registered and exits. Close is
	// idempotent and does not block.
	Close()
	// Exited is closed once the supervisor has exited and been reaped.
	Exited() <-chan struct{}
	PID() int
	// Waiting returns when the oldest line still without an answer was
	// sent, zero when every line is answered.
	Waiting() time.Time
}

// launcher starts a supervisor whose script reads the process table from
// table ("proc", "ps"; "" for the script's choice: /proc where mounted),
// with replay sent first, as Send sends it. The real one is launchShell;
// tests of the owner's timing logic use a fake.
type launcher func(grace time.Duration, ownerPGID int, cgBase, cgOwn, table string, replay [][]byte, reply func(i int, err error)) (deathPipe, error)

// shellPipe is a supervisor run by /bin/sh.
type shellPipe struct {
	w      *os.File // death pipe, write end; only the writer writes and closes it
	r      *os.File // reply pipe, read end; only the reader reads it
	cmd    *exec.Cmd
	exited chan struct{}
	status unix.WaitStatus // set before exited is closed
	kick   chan struct{}   // buffered(1): the writer has lines, or must close
	wdone  chan struct{}   // closed when the writer returned
	rdone  chan struct{}   // closed when the reader returned

	mu      sync.Mutex
	unsent  []byte   // guarded by mu; queued lines the writer has not taken
	waiting []waiter // guarded by mu; lines without an answer, oldest first
	closing bool     // guarded by mu; Close was called
	gone    error    // guarded by mu; set once no answer can come
}

// waiter is a line that waits for its answer.
type waiter struct {
	id    string // the line's registration id, "-" for none
	at    time.Time
	reply func(error) // nil: nobody waits
}

// launchShell starts the supervisor script in its own session with the read
// end of a fresh death pipe on its stdin and the write end of a reply pipe
// on its stdout. The death pipe's write end stays in the owner only:
// os.Pipe opens both ends close-on-exec, and the script receives the read
// end alone, so no child ever holds a write end and EOF comes exactly when
// the owner's last write end closes, by any death.
//
// The replay (a restarted supervisor's registrations) is in the death pipe
// before the script starts, as much of it as the pipe holds (grown to hold
// it where the system allows): an owner killed the moment the new
// supervisor exists, before any goroutine of it runs again, leaves a
// supervisor that reads those lines, then EOF, and kills their groups.
func launchShell(grace time.Duration, ownerPGID int, cgBase, cgOwn, table string, replay [][]byte, reply func(i int, err error)) (deathPipe, error) {
	if cgBase == "" {
		cgBase, cgOwn = "-", "-"
	}
	if table == "" {
		table = "-"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervisor pipe: %w", err)
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("supervisor reply pipe: %w", err)
	}
	cmd := exec.Command(Shell, "-c", script, "hermes-supervisor",
		strconv.FormatInt(grace.Milliseconds(), 10), strconv.Itoa(ownerPGID), cgBase, cgOwn, table)
	cmd.Stdin, cmd.Stdout = r, rw
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
	// detached-spawn: ok — the death supervisor runs in its own session so
	// that terminal signals aimed at the owner's group never reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	p := &shellPipe{w: w, r: rr, cmd: cmd, exited: make(chan struct{}),
		kick: make(chan struct{}, 1), wdone: make(chan struct{}), rdone: make(chan struct{})}
	if len(replay) > 0 {
		p.Send(replay, reply)
		p.prefill()
	}
	err = cmd.Start()
	r.Close()
	rw.Close()
	if err != nil {
		w.Close()
		rr.Close()
		return nil, fmt.Errorf("start supervisor %s: %w", Shell, err)
	}
	go p.writer() // ends once closing and written, or when the write end breaks
	go p.reader() // ends at EOF of the reply pipe: the script exited
	go func() {   // joined by whoever waits on Exited
		p.status, _ = reapChild(cmd.Process.Pid)
		close(p.exited)
	}()
	return p, nil
}

func (p *shellPipe) Send(lines [][]byte, reply func(i int, err error)) {
	p.mu.Lock()
	if err := p.goneLocked(); err != nil {
		p.mu.Unlock()
		if reply != nil {
			for i := range lines {
				reply(i, err)
			}
		}
		return
	}
	now := time.Now()
	for i, l := range lines {
		w := waiter{id: lineID(l), at: now}
		if reply != nil {
			w.reply = func(err error) { reply(i, err) }
		}
		p.waiting = append(p.waiting, w)
		p.unsent = append(p.unsent, l...)
	}
	p.mu.Unlock()
	nudge(p.kick)
}

// goneLocked is why no answer can come, nil while one can.
func (p *shellPipe) goneLocked() error {
	switch {
	case p.gone != nil:
		return p.gone
	case p.closing:
		return &lostError{fmt.Sprintf("supervisor %d: pipe closed", p.PID())}
	}
	return nil
}

// prefill writes, before the script starts, as much of the queued lines
// as the death pipe takes without blocking (one write: a pipe with room
// takes it all); the writer writes the rest.
func (p *shellPipe) prefill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	growPipe(p.w, len(p.unsent))
	rc, err := p.w.SyscallConn()
	if err != nil {
		return
	}
	rc.Write(func(fd uintptr) bool {
		// A blocking descriptor could wait forever: no reader runs yet.
		if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil && fl&unix.O_NONBLOCK != 0 {
			if n, err := unix.Write(int(fd), p.unsent); err == nil && n > 0 {
				p.unsent = p.unsent[n:]
			}
		}
		return true // one try: a full pipe is the writer's to wait on
	})
}

// writer writes the queued lines in order. A write may block for as long
// as the supervisor does not read (a full pipe): only this goroutine waits
// then. Once Close was called and everything is written, it closes the
// write end: EOF comes after the last line.
func (p *shellPipe) writer() {
	defer close(p.wdone)
	for {
		p.mu.Lock()
		b, closing := p.unsent, p.closing
		p.unsent = nil
		p.mu.Unlock()
		if len(b) > 0 {
			if _, err := p.w.Write(b); err != nil {
				p.w.Close()
				p.fail(&lostError{fmt.Sprintf("write to supervisor %d: %v", p.PID(), err)})
				return
			}
			continue // look again before closing: more may have come
		}
		if closing {
			p.w.Close()
			return
		}
		<-p.kick
	}
}

// reader matches the supervisor's answers to the lines, in order. It reads
// until EOF whatever comes, so that the script never blocks on its answers.
func (p *shellPipe) reader() {
	defer close(p.rdone)
	defer p.r.Close()
	sc := bufio.NewScanner(p.r)
	for sc.Scan() {
		verb, rest, _ := strings.Cut(sc.Text(), " ")
		id, reason, _ := strings.Cut(rest, " ")
		p.mu.Lock()
		if p.gone != nil {
			p.mu.Unlock()
			continue
		}
		if len(p.waiting) == 0 {
			p.mu.Unlock()
			p.fail(fmt.Errorf("supervisor %d answered %q to no line: %w", p.PID(), sc.Text(), ErrSupervisor))
			continue
		}
		w := p.waiting[0]
		p.waiting = p.waiting[1:]
		p.mu.Unlock()
		var err error
		switch {
		case id != w.id:
			err = fmt.Errorf("supervisor %d answered %q to line %s: %w", p.PID(), sc.Text(), w.id, ErrSupervisor)
		case verb == "N":
			err = &RefusedError{PID: p.PID(), ID: id, Reason: reason}
		case verb != "A":
			err = fmt.Errorf("supervisor %d answered %q: %w", p.PID(), sc.Text(), ErrSupervisor)
		}
		if w.reply != nil {
			w.reply(err)
		}
		if err != nil && !errors.As(err, new(*RefusedError)) {
			p.fail(err) // out of step: no later answer can be trusted
		}
	}
	p.fail(&lostError{fmt.Sprintf("supervisor %d exited before answering", p.PID())})
}

// fail ends every wait with err: no answer will come.
func (p *shellPipe) fail(err error) {
	p.mu.Lock()
	if p.gone == nil {
		p.gone = err
	}
	ws := p.waiting
	p.waiting = nil
	p.mu.Unlock()
	for _, w := range ws {
		if w.reply != nil {
			w.reply(err)
		}
	}
}

func (p *shellPipe) Close() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	nudge(p.kick)
}

func (p *shellPipe) Waiting() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) == 0 {
		return time.Time{}
	}
	return p.waiting[0].at
}

func (p *shellPipe) Exited() <-chan struct{} { return p.exited }

// killed reports whether the supervisor was killed by a signal (a kill,
// the OOM killer), not exited by itself. Valid once Exited is closed.
func (p *shellPipe) killed() bool { return p.status.Signaled() }
func (p *shellPipe) PID() int     { return p.cmd.Process.Pid }

// kill ends a supervisor that does not exit (stopped, stuck). Through the
// process's pidfd: once reaped, no recycled pid is hit.
func (p *shellPipe) kill() { p.cmd.Process.Kill() }

// lineID is the registration id a line names ("-" for none), as the
// supervisor echoes it in its answer.
func lineID(l []byte) string {
	f := strings.Fields(string(l))
	if len(f) >= 2 && (f[0] == "R" || f[0] == "U") {
		return f[1]
	}
	return "-"
}
