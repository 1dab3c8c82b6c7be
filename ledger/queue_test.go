//go:build linux

package ledger

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"golang.org/x/sys/unix"
)

// byteLocked reports whether some process holds the lock on byte n of the
// queue file in dir.
func byteLocked(t *testing.T, dir string, n int64) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, QueueName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: n, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	return lk.Type != unix.F_UNLCK
}

// waitInLine polls until writer n has locked its byte of the queue: the
// kernel gives no event for a lock another process takes.
func waitInLine(t *testing.T, dir string, n int64) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("writer %d in its place in line", n), func() bool { return byteLocked(t, dir, n) })
}

// TestQueueOrder: writers that queue while the lock is held get it in the
// order they queued, not in the order flock's wake-up race would pick.
func TestQueueOrder(t *testing.T) {
	dir := t.TempDir()
	holder := startHelper(t, "holder", []string{"LEDGER_DIR=" + dir}, nil, "locked")
	const writers = 5
	var hs []*helper
	var want []string
	for i := range writers {
		name := fmt.Sprintf("w%d", i)
		env := []string{"LEDGER_DIR=" + dir, "WRITER_NAME=" + name, "WRITER_N=1", fmt.Sprintf("LEADER_PID=%d", os.Getpid())}
		hs = append(hs, startHelper(t, "writer", env, nil, "ready"))
		want = append(want, name+"-0")
	}
	// Every writer runs before the first queues: a writer waits for the
	// lock at most LockTimeout from its "go", and starting a helper can
	// take longer than that on a loaded machine.
	for i, h := range hs {
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		waitInLine(t, dir, int64(i))
	}
	holder.stop()
	writersDone(t, hs)
	got := entriesIn(t, dir)
	if !reflect.DeepEqual(unitNames(got), want) {
		t.Errorf("entries in the order %v, want the order of the line %v", unitNames(got), want)
	}
}

// TestQueueStuckInLine: a writer stopped while in line (it keeps its
// ticket, never takes the lock) does not make the writers behind it fail.
func TestQueueStuckInLine(t *testing.T) {
	dir := t.TempDir()
	liner := startHelper(t, "liner", []string{"LEDGER_DIR=" + dir}, nil, "queued 0")
	l := openDir(t, dir)
	if err := l.Add(t.Context(), selfEntry(t, "behind")); err != nil {
		t.Fatalf("Add behind a stopped writer: %v", err)
	}
	if !byteLocked(t, dir, 0) {
		t.Errorf("the stopped writer's place was taken from it")
	}
	liner.stop()
	if byteLocked(t, dir, 0) {
		t.Errorf("place 0 still held after its writer exited")
	}
	got, _ := l.Entries(t.Context())
	if want := []string{"behind"}; !reflect.DeepEqual(unitNames(got), want) {
		t.Errorf("got %v, want %v", unitNames(got), want)
	}
}

// TestQueueReset: the lock holder empties a queue file that grew past
// queueReset, and tickets start again from 0.
func TestQueueReset(t *testing.T) {
	l := openTemp(t)
	if err := os.WriteFile(l.queue, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(l.queue, queueReset); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(t.Context(), selfEntry(t, "a")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(l.queue)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Errorf("queue file is %d bytes after a write past %d, want 0", fi.Size(), queueReset)
	}
	tk := l.enqueue()
	defer tk.leave()
	if tk.own == nil || tk.n != 0 {
		t.Errorf("ticket after the reset: in line %v, number %d; want in line, 0", tk.own != nil, tk.n)
	}
}
