package ledger

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestNoLineWriters: writers that do not queue (EnvQueue=off, the only
// path on darwin and FreeBSD) keep the contract that holds without a line:
// every Add lands, none is lost or doubled, and the file stays valid. They
// are released together while a holder has the lock, so that all contend
// for it at once when it goes. "mixed" has half of them in line (on Linux)
// and half out: those out of line cost the others fairness, not exclusion.
func TestNoLineWriters(t *testing.T) {
	const writers, each = 4, 25
	for _, tc := range []struct {
		name string
		off  func(i int) bool // writer i runs with EnvQueue=off
	}{
		{"all out of line", func(int) bool { return true }},
		{"mixed", func(i int) bool { return i%2 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			holder := startHelper(t, "holder", []string{"LEDGER_DIR=" + dir}, nil, "locked")
			var hs []*helper
			for i := range writers {
				env := []string{"LEDGER_DIR=" + dir, fmt.Sprintf("WRITER_NAME=w%d", i), fmt.Sprintf("WRITER_N=%d", each), fmt.Sprintf("LEADER_PID=%d", os.Getpid())}
				if tc.off(i) {
					env = append(env, EnvQueue+"=off")
				}
				hs = append(hs, startHelper(t, "writer", env, nil, "ready"))
			}
			for _, h := range hs {
				if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
					t.Fatal(err)
				}
			}
			holder.stop()
			writersDone(t, hs)
			b, err := os.ReadFile(filepath.Join(dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(b)
			if err != nil {
				t.Fatalf("ledger file after the writers: %v", err)
			}
			if aside, _ := filepath.Glob(filepath.Join(dir, FileName+".corrupt-*")); len(aside) != 0 {
				t.Errorf("files moved aside during the writes: %v", aside)
			}
			seen := map[string]int{}
			for _, e := range got {
				seen[e.Unit]++
			}
			if len(got) != writers*each {
				t.Errorf("got %d entries, want %d", len(got), writers*each)
			}
			for i := range writers {
				for j := range each {
					if u := fmt.Sprintf("w%d-%d", i, j); seen[u] != 1 {
						t.Errorf("entry %s: got %d copies, want 1", u, seen[u])
					}
				}
			}
			// Nobody queued: the writers out of line never touch the queue
			// file, so with all of them out it was never made.
			if _, err := os.Stat(filepath.Join(dir, QueueName)); tc.name == "all out of line" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("queue file with every writer out of line: stat err %v, want not exist", err)
			}
		})
	}
}
