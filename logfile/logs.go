package logfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// Limits bound one log on disk: the file itself holds at most MaxSize bytes
// (0: no bound, never rotated) and Keep rotated files are kept beside it, so
// the log takes at most MaxSize × (Keep + 1) bytes.
type Limits struct {
	MaxSize int64
	Keep    int
}

// maxPending bounds the bytes of a unit's output that hermesd holds in
// memory between reading them from the unit's pipe and writing them to the
// log. Past it, output is dropped (and counted, and said in the log) rather
// than making the unit wait on hermesd or the disk.
const maxPending = 1 << 20

// reportEvery bounds how often losses of one log are reported; each is
// counted in the log itself anyway.
const reportEvery = 10 * time.Second

// Logs carries units' output into their log files and keeps every log
// within its Limits.
//
// Open gives each run of a unit the file to use as its stdout and stderr.
// For a unit that dies with hermesd it is a pipe, and hermesd writes what
// passes through it, rotating on the write that would cross MaxSize: no log
// file of such a unit ever holds more than MaxSize bytes. For a survivor it
// is the log file itself; Watch names those files, and Run rotates each on
// the write that crosses MaxSize, as inotify reports it (no timer). A
// survivor's file can exceed MaxSize by what the unit writes between that
// write and the rotation (the slack, docs/security.md): the time for
// hermesd to wake up and copy at most MaxSize bytes.
//
// A log that cannot be written (a full disk, a removed directory) never
// blocks a unit: the output is counted as dropped, Report is called once per
// failure, and the next write that succeeds starts with a line saying how
// many bytes were lost and why.
type Logs struct {
	// Report is told, from any goroutine and without blocking for long,
	// that a unit's log lost output or could not be rotated. nil discards.
	Report func(path string, err error)

	mu      sync.Mutex
	files   map[string]*file  // guarded by mu: entries with pipes open or watched
	watch   map[string]Limits // guarded by mu: the direct writers' files (Watch)
	readers map[*os.File]bool // guarded by mu: pipe read ends being carried
	changed chan struct{}     // cap 1: watch changed
	wg      sync.WaitGroup    // the carrying goroutines
}

// NewLogs returns a Logs reporting to report (nil discards).
func NewLogs(report func(path string, err error)) *Logs {
	return &Logs{Report: report, files: map[string]*file{}, watch: map[string]Limits{},
		readers: map[*os.File]bool{}, changed: make(chan struct{}, 1)}
}

// file is one log file as hermesd writes and rotates it.
type file struct {
	path string
	mu   sync.Mutex // held for every write to out and every rotation of path
	lim  Limits     // guarded by mu
	out  *os.File   // guarded by mu: hermesd's descriptor for pipes; nil when closed
	size int64      // guarded by mu: bytes in out
	refs int        // guarded by Logs.mu: open pipes plus 1 while watched

	dropped int64     // guarded by mu: bytes lost since the last note in the log
	why     error     // guarded by mu: why the first of them were lost
	failing bool      // guarded by mu: losing output; reported once, until a write succeeds
	said    time.Time // guarded by mu: when a loss was last reported
}

// Open returns the file a unit's run gets as its stdout and stderr: the log
// file itself when direct (a survivor: see Open at package level), else the
// write end of a pipe whose output hermesd carries into path within lim. The
// caller hands it to the child and closes its own copy once the child has
// started. Either way the log file is opened first, so that every refusal
// (a link, an unsafe directory, not ours) is the caller's error at once.
func (l *Logs) Open(path string, lim Limits, direct bool) (*os.File, error) {
	if direct || lim.MaxSize <= 0 {
		return Open(path)
	}
	fl := l.ref(path)
	fl.mu.Lock()
	fl.lim = lim
	if fl.out == nil {
		if err := fl.reopenLocked(); err != nil {
			fl.mu.Unlock()
			l.unref(fl)
			return nil, err
		}
	}
	fl.mu.Unlock()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		l.unref(fl)
		return nil, fmt.Errorf("log %s: pipe: %w", path, err)
	}
	// The read end is non-blocking for the runtime's poller; the write end
	// stays blocking, as a child expects of its stdout. A bigger pipe means
	// fewer wake-ups for a chatty unit; the default is fine if refused.
	_ = unix.SetNonblock(p[0], true)
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, 1<<20)
	r := os.NewFile(uintptr(p[0]), "|"+path)
	w := os.NewFile(uintptr(p[1]), path)
	l.mu.Lock()
	l.readers[r] = true
	l.mu.Unlock()
	l.wg.Go(func() {
		l.carry(r, fl)
		l.mu.Lock()
		delete(l.readers, r)
		l.mu.Unlock()
		r.Close()
		l.unref(fl)
	})
	return w, nil
}

// Watch sets the log files that writers append to directly (survivors,
// re-adopted or spawned) and their limits, replacing the previous set. Run
// rotates each on the write that crosses its MaxSize, and checks each new
// one at once (a survivor may have written while no hermesd watched).
func (l *Logs) Watch(set map[string]Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, lim := range set {
		if old, ok := l.watch[p]; ok && old == lim {
			continue
		}
		if _, ok := l.watch[p]; !ok {
			l.refLocked(p)
		}
		l.watch[p] = lim
	}
	for p := range l.watch {
		if _, ok := set[p]; !ok {
			delete(l.watch, p)
			l.unrefLocked(l.files[p])
		}
	}
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// Run watches the files given to Watch until ctx ends; then it stops
// carrying pipes (what was read is written first) and returns once every
// carrying goroutine has. Without inotify, direct writers' logs are not
// rotated, and Run says so through Report, then waits for ctx.
func (l *Logs) Run(ctx context.Context) error {
	defer l.stopPipes()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		l.report("", fmt.Errorf("logs of survivors will not be rotated: inotify: %w", err))
		<-ctx.Done()
		return nil
	}
	defer w.Close()
	watched := map[string]bool{}
	sync := func() {
		l.mu.Lock()
		want := make(map[string]Limits, len(l.watch))
		for p, lim := range l.watch {
			want[p] = lim
		}
		l.mu.Unlock()
		for p := range watched {
			if _, ok := want[p]; !ok {
				_ = w.Remove(p)
				delete(watched, p)
			}
		}
		for p := range want {
			if !watched[p] && w.Add(p) == nil {
				watched[p] = true
			}
			l.check(p) // a missing file is added on a later sync
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.changed:
			sync()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			switch {
			case ev.Has(fsnotify.Write):
				l.check(ev.Name)
			case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
				// The watch went with the inode; watch whatever is at the
				// name now.
				delete(watched, ev.Name)
				sync()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				sync() // events were lost: look at every file
			}
		}
	}
}

// stopPipes ends the carrying of every pipe: their read ends time out at
// once, what was read is written, and the goroutines are joined.
func (l *Logs) stopPipes() {
	l.mu.Lock()
	for r := range l.readers {
		_ = r.SetReadDeadline(time.Now())
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// check rotates the watched file at path if it has grown past its limit.
func (l *Logs) check(path string) {
	l.mu.Lock()
	lim, ok := l.watch[path]
	fl := l.files[path]
	l.mu.Unlock()
	if !ok || fl == nil || lim.MaxSize <= 0 {
		return
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.out != nil {
		// hermesd writes here too: a rename-rotation moves both.
		if fi, err := os.Lstat(path); err == nil && fi.Size() > lim.MaxSize {
			fl.lim = lim
			fl.rotateLocked(l)
		}
		return
	}
	if _, err := Rotate(path, lim.MaxSize, lim.Keep); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.report(path, err)
	}
}

func (l *Logs) report(path string, err error) {
	if l.Report != nil {
		l.Report(path, err)
	}
}

func (l *Logs) ref(path string) *file {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refLocked(path)
}

func (l *Logs) refLocked(path string) *file {
	fl := l.files[path]
	if fl == nil {
		fl = &file{path: path}
		l.files[path] = fl
	}
	fl.refs++
	return fl
}

func (l *Logs) unref(fl *file) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unrefLocked(fl)
}

// unrefLocked drops a reference; the last one closes hermesd's descriptor
// and forgets the file, unless output was lost that the log does not say yet.
func (l *Logs) unrefLocked(fl *file) {
	if fl == nil {
		return
	}
	fl.refs--
	if fl.refs > 0 {
		return
	}
	fl.mu.Lock()
	if fl.out != nil {
		fl.out.Close()
		fl.out = nil
	}
	if fl.dropped == 0 { // else kept: the next run's output starts with the note
		delete(l.files, fl.path)
	}
	fl.mu.Unlock()
}

// pipe is what the two goroutines carrying one pipe share. The reader waits
// for the writer only while the writer makes progress: when a write has
// not finished within stallAfter (a hung file system), the reader drops
// what it cannot hold until the writer is back, so the unit is never held
// up by hermesd or the disk for longer than that.
type pipe struct {
	mu       sync.Mutex
	buf      []byte        // guarded by mu: read, not yet written; at most maxPending
	dropped  int64         // guarded by mu: read and not kept for want of room
	eof      bool          // guarded by mu: the reader is done
	stalled  bool          // guarded by mu: the writer has not made progress within stallAfter
	ready    chan struct{} // cap 1: the reader has put something in buf (or eof)
	progress chan struct{} // cap 1: the writer has written a batch
}

// stallAfter is how long the reader waits for a writer that is behind by
// maxPending bytes before it drops output instead.
const stallAfter = time.Second

// carry reads r until EOF (every writer closed it) or its deadline, and
// has the bytes written to fl by a second goroutine; it returns once both
// are done.
func (l *Logs) carry(r *os.File, fl *file) {
	p := &pipe{ready: make(chan struct{}, 1), progress: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	wg.Go(func() { p.write(l, fl) })
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		p.mu.Lock()
		for n > 0 && len(p.buf)+n > maxPending && !p.stalled {
			p.mu.Unlock()
			p.waitProgress()
			p.mu.Lock()
		}
		if n > 0 {
			if len(p.buf)+n > maxPending {
				p.dropped += int64(n)
			} else {
				p.buf = append(p.buf, buf[:n]...)
			}
		}
		if err != nil {
			p.eof = true
		}
		p.mu.Unlock()
		select {
		case p.ready <- struct{}{}:
		default:
		}
		if err != nil {
			break
		}
	}
	wg.Wait()
}

// waitProgress waits for the writer to finish a batch, at most stallAfter;
// past that the writer is stalled until it finishes one.
func (p *pipe) waitProgress() {
	t := time.NewTimer(stallAfter)
	defer t.Stop()
	select {
	case <-p.progress:
	case <-t.C:
		p.mu.Lock()
		p.stalled = true
		p.mu.Unlock()
	}
}

func (p *pipe) write(l *Logs, fl *file) {
	var spare []byte
	for range p.ready {
		p.mu.Lock()
		b, dropped, eof := p.buf, p.dropped, p.eof
		p.buf, p.dropped = spare[:0], 0
		p.mu.Unlock()
		fl.write(l, b, dropped)
		spare = b
		p.mu.Lock()
		p.stalled = false
		p.mu.Unlock()
		select {
		case p.progress <- struct{}{}:
		default:
		}
		if eof {
			return
		}
	}
}

// write appends b to the log, rotating first whenever the next bytes would
// cross MaxSize (cutting b after a newline where it can, so lines stay
// whole). dropped bytes were lost before b. Output lost earlier is noted in
// the log first, by a line that says how much and why.
func (fl *file) write(l *Logs, b []byte, dropped int64) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if dropped > 0 {
		fl.lostLocked(l, dropped, errors.New("the unit wrote faster than its log could be written"))
	}
	if fl.dropped > 0 {
		note := fmt.Sprintf("--- hermesd: %d bytes of output lost here: %v ---\n", fl.dropped, fl.why)
		if _, err := fl.putLocked(l, []byte(note)); err != nil {
			fl.lostLocked(l, int64(len(b)), err)
			return
		}
		fl.dropped, fl.why = 0, nil
	}
	if left, err := fl.putLocked(l, b); err != nil {
		fl.lostLocked(l, int64(left), err)
		return
	}
	fl.failing = false
}

func max0(n int) int { return max(n, 0) }

// putLocked writes b; on an error it returns how many bytes were not.
func (fl *file) putLocked(l *Logs, b []byte) (int, error) {
	for len(b) > 0 {
		if fl.out == nil {
			if err := fl.reopenLocked(); err != nil {
				return len(b), err
			}
		}
		n := len(b)
		if max := fl.lim.MaxSize; max > 0 && fl.size+int64(n) > max {
			room := int(max - fl.size)
			if i := bytes.LastIndexByte(b[:max0(room)], '\n'); i >= 0 {
				n = i + 1
			} else if fl.size > 0 {
				fl.rotateLocked(l)
				continue
			} else {
				n = room // one line longer than the whole file
			}
		}
		w, err := fl.out.Write(b[:n])
		fl.size += int64(w)
		b = b[w:]
		if err != nil {
			return len(b), err
		}
	}
	return 0, nil
}

// lostLocked counts n bytes lost for err, reporting the first loss of a
// run of failures.
func (fl *file) lostLocked(l *Logs, n int64, err error) {
	if !fl.failing && time.Since(fl.said) >= reportEvery {
		l.report(fl.path, fmt.Errorf("unit output lost: %w", err))
		fl.said = time.Now()
	}
	fl.failing = true
	if fl.why == nil {
		fl.why = err
	}
	fl.dropped += n
}

// reopenLocked opens path for hermesd's writes.
func (fl *file) reopenLocked() error {
	out, err := Open(fl.path)
	if err != nil {
		return err
	}
	fi, err := out.Stat()
	if err != nil {
		out.Close()
		return fmt.Errorf("log %s: %w", fl.path, err)
	}
	fl.out, fl.size = out, fi.Size()
	return nil
}

// rotateLocked moves path to path.1 (after shifting the older ones; with
// Keep == 0 it drops it) and starts a new path. No byte is copied, so it
// needs no free space. If a rename fails, the file is truncated instead so
// that the bound holds; the failure is reported.
func (fl *file) rotateLocked(l *Logs) {
	var err error
	if fl.lim.Keep > 0 {
		if err = shift(fl.path, fl.lim.Keep); err == nil {
			err = os.Rename(fl.path, numbered(fl.path, 1))
		}
	} else {
		err = os.Remove(fl.path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.report(fl.path, fmt.Errorf("rotate log by rename: %w; truncated it instead", err))
		if fl.out != nil {
			_ = fl.out.Truncate(0)
		}
		fl.size = 0
		return
	}
	if fl.out != nil {
		fl.out.Close()
		fl.out = nil
	}
	fl.size = 0
	if err := fl.reopenLocked(); err != nil {
		l.report(fl.path, fmt.Errorf("reopen log after rotation: %w", err))
	}
}
