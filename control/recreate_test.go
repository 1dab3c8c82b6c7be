package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// serveEcho accepts on ln until it is closed, answering each connection
// with "ok\n".
func serveEcho(t *testing.T, ln net.Listener) {
	t.Helper()
	testkit.Serve(t, ln, func(c net.Conn) { c.Write([]byte("ok\n")) })
}

// answers reports whether a connect to path reaches a server that says ok.
func answers(path string) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, 3)
	if _, err := c.Read(b); err != nil {
		return err
	}
	if string(b) != "ok\n" {
		return fmt.Errorf("got %q", b)
	}
	return nil
}

// logged returns a logf that sends every message on the returned channel.
func logged() (func(string, ...any), <-chan string) {
	ch := make(chan string, 1024)
	return func(f string, a ...any) {
		select {
		case ch <- fmt.Sprintf(f, a...):
		default:
		}
	}, ch
}

func await(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m := <-ch:
			if strings.Contains(m, want) {
				return
			}
			t.Logf("logged: %s", m)
		case <-deadline:
			t.Fatalf("nothing logged containing %q", want)
		}
	}
}

// TestListenRecreatesRemovedSocket: a control socket removed while the
// daemon runs (rm, a tmp cleaner, its directory wiped) is bound again, mode
// 0600 in a 0700 directory, and answers.
func TestListenRecreatesRemovedSocket(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(path string) error
	}{
		{"socket removed", os.Remove},
		{"socket renamed away", func(path string) error { return os.Rename(path, path+".old") }},
		{"directory moved away", func(path string) error { return os.Rename(filepath.Dir(path), filepath.Dir(path)+".old") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(privateDir(t), "hermesd.sock")
			logf, msgs := logged()
			ln, err := Listen(path, logf)
			if err != nil {
				t.Fatal(err)
			}
			serveEcho(t, ln)
			if err := answers(path); err != nil {
				t.Fatal(err)
			}
			if err := tc.remove(path); err != nil {
				t.Fatal(err)
			}
			await(t, msgs, "re-created it")
			if err := answers(path); err != nil {
				t.Fatalf("re-created socket does not answer: %v", err)
			}
			testkit.Perms(t, map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700})
		})
	}
}

// TestCloseLeavesAnotherSocket: a daemon whose path now holds another
// daemon's socket does not remove it when it stops.
func TestCloseLeavesAnotherSocket(t *testing.T) {
	dir := privateDir(t)
	path := filepath.Join(dir, "hermesd.sock")
	first, err := Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The second daemon's socket takes the name in one step (rename), so
	// the first sees no removal to repair.
	tmp := filepath.Join(dir, "second.sock")
	second, err := net.Listen("unix", tmp)
	if err != nil {
		t.Fatal(err)
	}
	second.(*net.UnixListener).SetUnlinkOnClose(false)
	serveEcho(t, second)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := answers(path); err != nil {
		t.Fatalf("the second daemon's socket is gone after the first closed: %v", err)
	}
}

// TestSocketPathTooLong: a path over the kernel's limit is refused by Listen
// and Dial with an error that says so and what to do.
func TestSocketPathTooLong(t *testing.T) {
	dir := privateDir(t)
	path := filepath.Join(dir, strings.Repeat("s", 108-len(dir))+".sock")
	ln, err := Listen(path, nil)
	if err == nil {
		ln.Close()
		t.Fatal("Listen succeeded")
	}
	for _, err := range []error{err, func() error { _, err := Dial(path); return err }()} {
		if !errors.Is(err, ErrPathTooLong) || !strings.Contains(err.Error(), "limit of 107") || !strings.Contains(err.Error(), "shorter --socket") {
			t.Errorf("got %v, want ErrPathTooLong saying the limit and the fix", err)
		}
	}
}

// inotifyCount counts this process's inotify instances.
func inotifyCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count inotify instances in: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestUnwatchKeepsServing: Unwatch tears down the watch of the socket's
// directory (its inotify instance is closed when it returns) and the
// socket goes on answering until Close, which still removes it; a second
// Unwatch, and Close after it, are fine.
func TestUnwatchKeepsServing(t *testing.T) {
	path := filepath.Join(privateDir(t), "hermesd.sock")
	before := inotifyCount(t)
	ln, err := Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	serveEcho(t, ln)
	if got := inotifyCount(t); got != before+1 {
		t.Fatalf("inotify instances once listening: %d, want %d", got, before+1)
	}
	ln.Unwatch()
	if got := inotifyCount(t); got != before {
		t.Errorf("inotify instances after Unwatch: %d, want %d", got, before)
	}
	if err := answers(path); err != nil {
		t.Errorf("the socket does not answer after Unwatch: %v", err)
	}
	ln.Unwatch()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
}
