package logfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"
)

// Limits bound one log on disk: the file itself is rotated once it holds
// more than MaxSize bytes (0: never), and Keep rotated files are kept beside
// it, so the log takes about MaxSize × (Keep + 1) bytes (see Logs for the
// slack).
type Limits struct {
	MaxSize int64
	Keep    int
}

// Logs keeps units' log files within their Limits. Watch names the files;
// Run rotates each (Rotate) on the write that crosses its MaxSize, as
// inotify reports it: no timer, and no wake-up while nothing is written.
//
// Units write their log files directly (see the package doc), so a unit
// writes on while hermesd notices and rotates: the slack. A log then holds
// at most MaxSize × (Keep + 1) bytes plus what the unit writes between the
// write that crosses MaxSize and the truncation (hermesd's wake-up and the
// copy of at most MaxSize bytes), and nothing grows while hermesd is down
// but the live file (checked again at once when a watch begins). Rotation
// never needs more free space than MaxSize, and without that it drops the
// old content rather than fail: the bound holds on a full disk.
type Logs struct {
	// Report hears of every rotation that failed or dropped content, from
	// Run's goroutine. nil discards.
	Report func(path string, err error)

	mu      sync.Mutex
	watch   map[string]Limits // guarded by mu
	dirty   map[string]bool   // guarded by mu; the paths of watch changed since Run last looked
	changed chan struct{}     // cap 1: dirty is not empty

	checks atomic.Int64 // files checked so far (Run's work, for tests)
}

// NewLogs returns a Logs that reports to report (nil discards).
func NewLogs(report func(path string, err error)) *Logs {
	return &Logs{Report: report, watch: map[string]Limits{}, dirty: map[string]bool{}, changed: make(chan struct{}, 1)}
}

// Watch sets the log files to keep within their limits, replacing the
// previous set. Run checks each file new to the set, or whose limits
// changed, at once (a unit may have written while nothing watched), then
// on every write; a file that stays in the set with the same limits is
// not looked at again. Safe to call from any goroutine; it never blocks.
func (l *Logs) Watch(set map[string]Limits) {
	l.mu.Lock()
	for p := range l.watch {
		if set[p].MaxSize <= 0 {
			delete(l.watch, p)
			l.dirty[p] = true
		}
	}
	for p, lim := range set {
		l.setLocked(p, lim, false)
	}
	l.mu.Unlock()
	l.poke()
}

// Add adds one file to the set, or changes its limits (no MaxSize: takes
// it out), and has Run check it and watch it now, even when it was in the
// set already (a unit that just opened its log, which did not exist when
// it was first given): at a cost that does not depend on how many files
// the set holds.
func (l *Logs) Add(path string, lim Limits) {
	l.mu.Lock()
	marked := l.setLocked(path, lim, true)
	l.mu.Unlock()
	if marked { // a file out of the set that stays out wakes no one
		l.poke()
	}
}

// setLocked puts p with lim into the set (MaxSize 0: takes it out) and
// marks it for Run to look at, if that changed anything or always; it
// reports whether it marked it.
func (l *Logs) setLocked(p string, lim Limits, always bool) (marked bool) {
	old, had := l.watch[p]
	switch {
	case lim.MaxSize <= 0 && had:
		delete(l.watch, p)
	case lim.MaxSize <= 0 || (had && old == lim && !always):
		return false
	default:
		l.watch[p] = lim
	}
	l.dirty[p] = true
	return true
}

func (l *Logs) poke() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// Run watches the files given to Watch until ctx ends, and returns nil then.
// Without inotify it reports that logs will not be rotated, and waits for
// ctx.
func (l *Logs) Run(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		l.report("", fmt.Errorf("logs will not be rotated: inotify: %w", err))
		<-ctx.Done()
		return nil
	}
	defer w.Close()
	watched := map[string]bool{}
	want := map[string]Limits{} // Run's copy of watch
	// look brings the watch of path in line with lim (MaxSize 0: not in
	// the set) and checks the file. A file watch follows the inode,
	// which a rotation keeps (it truncates in place). A missing file is
	// watched once it is added again: a unit adds its log once it
	// opened it.
	look := func(p string, lim Limits) {
		if lim.MaxSize <= 0 {
			delete(want, p)
			if watched[p] {
				_ = w.Remove(p)
				delete(watched, p)
			}
			return
		}
		want[p] = lim
		if !watched[p] && w.Add(p) == nil {
			watched[p] = true
		}
		l.check(p, lim)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.changed:
			for p, lim := range l.takeDirty() {
				look(p, lim)
			}
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			switch {
			case ev.Has(fsnotify.Write):
				if lim, ok := want[ev.Name]; ok {
					l.check(ev.Name, lim)
				}
			case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
				// The watch went with the inode; watch what is at the
				// name now, if anything.
				delete(watched, ev.Name)
				if lim, ok := want[ev.Name]; ok {
					look(ev.Name, lim)
				}
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				for p, lim := range want { // events were lost: look at every file
					look(p, lim)
				}
			}
		}
	}
}

// takeDirty returns the changed files of the set with their limits
// (MaxSize 0: no longer in it), and forgets that they changed.
func (l *Logs) takeDirty() map[string]Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Limits, len(l.dirty))
	for p := range l.dirty {
		out[p] = l.watch[p]
	}
	clear(l.dirty)
	return out
}

// check rotates the file at path if it has grown past lim.
func (l *Logs) check(path string, lim Limits) {
	l.checks.Add(1)
	if _, err := Rotate(path, lim.MaxSize, lim.Keep); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.report(path, err)
	}
}

func (l *Logs) report(path string, err error) {
	if l.Report != nil {
		l.Report(path, err)
	}
}
