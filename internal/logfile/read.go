package logfile

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// maxLine bounds a line Lines delivers: a longer run without a newline is
// delivered in pieces of this size rather than buffered without limit.
const maxLine = 64 << 10

// pollInterval is how often a follower looks at the file when inotify is not
// available (no instances left, or a file system without it).
const pollInterval = 250 * time.Millisecond

// Tail writes the last n lines of the log file at path to w (all of it when
// n < 0; a final line without a newline counts as a line). With follow it
// then keeps writing what is appended until ctx ends, and returns nil then.
// Following survives rotation (the file shrinks: it restarts at offset 0)
// and replacement (another file renamed onto path: it finishes the old file
// and continues with the new one from its start). A missing file is an error
// wrapping fs.ErrNotExist; an error from w ends Tail with that error.
func Tail(ctx context.Context, path string, n int, follow bool, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("read log: %w", err)
	}
	start, err := LastLinesOffset(f, fi.Size(), n)
	if err != nil {
		f.Close()
		return fmt.Errorf("read log %s: %w", path, err)
	}
	if !follow {
		defer f.Close()
		if _, err := io.Copy(w, io.NewSectionReader(f, start, fi.Size()-start)); err != nil {
			return fmt.Errorf("read log %s: %w", path, err)
		}
		return nil
	}
	fl := &follower{path: path, f: f, off: start}
	return fl.run(ctx, func(b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

// Lines streams the lines appended to the log file at path after byte offset
// offset, without their newline, for the log-line readiness probe: the caller
// notes the file's size before it starts the unit and passes it here. The
// channel is closed when ctx ends (or, earlier, when the file can no longer
// be read). A missing file is waited for; rotation and replacement are
// followed as Tail does, and a line cut by a rotation is delivered whole.
// The caller must keep receiving or cancel ctx.
func Lines(ctx context.Context, path string, offset int64) (<-chan string, error) {
	if offset < 0 {
		return nil, fmt.Errorf("follow log %s: offset %d is negative", path, offset)
	}
	f, err := os.Open(path)
	if err := unlessMissing(err); err != nil {
		return nil, err
	}
	fl := &follower{path: path, f: f, off: offset}
	if f == nil {
		fl.off = 0
	}
	ch := make(chan string)
	go func() {
		defer close(ch)
		var partial []byte
		send := func(line []byte) error {
			select {
			case ch <- string(line):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		_ = fl.run(ctx, func(b []byte) error {
			for len(b) > 0 {
				i := bytes.IndexByte(b, '\n')
				if i < 0 {
					partial = append(partial, b...)
					for len(partial) >= maxLine {
						if err := send(partial[:maxLine]); err != nil {
							return err
						}
						partial = partial[maxLine:]
					}
					return nil
				}
				line := b[:i]
				if len(partial) > 0 {
					line = append(partial, line...)
					partial = partial[:0]
				}
				if err := send(line); err != nil {
					return err
				}
				b = b[i+1:]
			}
			return nil
		})
	}()
	return ch, nil
}

// LastLinesOffset returns the offset at which the last n lines of f (of size
// size) start (0 when n < 0: all of them). A newline that ends the file does
// not start another line.
func LastLinesOffset(f io.ReaderAt, size int64, n int) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	if n == 0 {
		return size, nil
	}
	buf := make([]byte, 32<<10)
	count := 0
	pos := size
	for pos > 0 {
		chunk := min(int64(len(buf)), pos)
		pos -= chunk
		if _, err := f.ReadAt(buf[:chunk], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := chunk - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == size-1 {
				continue
			}
			count++
			if count == n {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}

// follower reads a file from an offset and then what is appended to it. It
// wakes on inotify events for the file's name in its directory, and falls
// back to polling when inotify is unavailable.
type follower struct {
	path string
	f    *os.File      // file being read; nil while path does not exist
	off  int64         // next offset to read in f
	poll time.Duration // if set, poll at this interval instead of using inotify
}

// run emits the bytes of the file from off on, and keeps emitting appended
// bytes until ctx ends (nil) or emit or a read fails (that error). It closes
// the file it holds when it returns.
func (fl *follower) run(ctx context.Context, emit func([]byte) error) error {
	defer func() {
		if fl.f != nil {
			fl.f.Close()
		}
	}()
	var (
		events <-chan fsnotify.Event // nil when the directory watch is gone
		errs   <-chan error
		ticker *time.Ticker // set while polling
		tick   <-chan time.Time
	)
	// polling turns the ticker on or off. It is on when inotify is
	// unavailable, when the directory watch is gone (the directory was
	// removed or moved away), and while path is missing: a directory
	// removed while the follower holds a file in it is not released, and
	// sends no event, until that file is closed.
	polling := func(on bool) {
		switch {
		case on && ticker == nil:
			ticker = time.NewTicker(cmp.Or(fl.poll, pollInterval))
			tick = ticker.C
		case !on && ticker != nil && events != nil:
			ticker.Stop()
			ticker, tick = nil, nil
		}
	}
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	// The watch is set before the first read, so nothing appended after
	// that read goes unnoticed.
	if w, err := fl.watch(); err == nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	} else {
		polling(true)
	}
	buf := make([]byte, 32<<10)
	dir, base := filepath.Dir(fl.path), filepath.Base(fl.path)
	for {
		if err := fl.drain(buf, emit); err != nil {
			return err
		}
		switched, err := fl.reopen()
		if err != nil {
			return err
		}
		if switched {
			continue
		}
		polling(fl.missing())
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev, ok := <-events:
				switch {
				case !ok, ev.Name == dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
					events, errs = nil, nil
					polling(true)
					break wait
				case filepath.Base(ev.Name) == base && !ev.Has(fsnotify.Chmod):
					break wait
				}
			case <-errs:
				break wait // an overflow may have hidden events: look again
			case <-tick:
				break wait
			}
		}
	}
}

// missing reports whether nothing is at path.
func (fl *follower) missing() bool {
	_, err := os.Lstat(fl.path)
	return errors.Is(err, fs.ErrNotExist)
}

func (fl *follower) watch() (*fsnotify.Watcher, error) {
	if fl.poll > 0 {
		return nil, errors.ErrUnsupported
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(filepath.Dir(fl.path)); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// drain emits everything from off to the current end of f, restarting at 0
// when f has shrunk below off (it was truncated by a rotation).
func (fl *follower) drain(buf []byte, emit func([]byte) error) error {
	if fl.f == nil {
		return nil
	}
	fi, err := fl.f.Stat()
	if err != nil {
		return fmt.Errorf("follow log: %w", err)
	}
	if fi.Size() < fl.off {
		fl.off = 0
	}
	for {
		n, err := fl.f.ReadAt(buf, fl.off)
		if n > 0 {
			fl.off += int64(n)
			if err := emit(buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow log: %w", err)
		}
	}
}

// reopen switches to the file now at path when it is another file than the
// one held (created, or renamed onto path), and reports whether it did. The
// old file has been drained before. While path is missing the old file is
// kept: a writer may still hold it.
func (fl *follower) reopen() (bool, error) {
	pfi, err := os.Stat(fl.path)
	if err != nil {
		return false, unlessMissing(err)
	}
	if fl.f != nil {
		ffi, err := fl.f.Stat()
		if err != nil {
			return false, fmt.Errorf("follow log: %w", err)
		}
		if os.SameFile(pfi, ffi) {
			return false, nil
		}
	}
	f, err := os.Open(fl.path)
	if err != nil {
		return false, unlessMissing(err)
	}
	if fl.f != nil {
		fl.f.Close()
	}
	fl.f, fl.off = f, 0
	return true, nil
}

// unlessMissing is nil for no error and for one saying path is missing (it
// is waited for), else err wrapped.
func unlessMissing(err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("follow log: %w", err)
}
