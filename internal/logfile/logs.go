package logfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

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
	changed chan struct{}     // cap 1: watch changed
}

// NewLogs returns a Logs that reports to report (nil discards).
func NewLogs(report func(path string, err error)) *Logs {
	return &Logs{Report: report, watch: map[string]Limits{}, changed: make(chan struct{}, 1)}
}

// Watch sets the log files to keep within their limits, replacing the
// previous set. Run checks every file of the set at once (a unit may have
// written while nothing watched), then on every write. Safe to call from any
// goroutine; it never blocks.
func (l *Logs) Watch(set map[string]Limits) {
	l.mu.Lock()
	l.watch = make(map[string]Limits, len(set))
	for p, lim := range set {
		if lim.MaxSize > 0 {
			l.watch[p] = lim
		}
	}
	l.mu.Unlock()
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
	var want map[string]Limits
	sync := func() {
		l.mu.Lock()
		want = l.watch
		l.mu.Unlock()
		for p := range watched {
			if _, ok := want[p]; !ok {
				_ = w.Remove(p)
				delete(watched, p)
			}
		}
		for p := range want {
			// A file watch follows the inode, which a rotation keeps (it
			// truncates in place). A missing file is watched on a later
			// sync: Watch is called again once a unit has started.
			if !watched[p] && w.Add(p) == nil {
				watched[p] = true
			}
			l.check(p, want[p])
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
				if lim, ok := want[ev.Name]; ok {
					l.check(ev.Name, lim)
				}
			case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
				// The watch went with the inode; watch what is at the
				// name now, if anything.
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

// check rotates the file at path if it has grown past lim.
func (l *Logs) check(path string, lim Limits) {
	if _, err := Rotate(path, lim.MaxSize, lim.Keep); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.report(path, err)
	}
}

func (l *Logs) report(path string, err error) {
	if l.Report != nil {
		l.Report(path, err)
	}
}
