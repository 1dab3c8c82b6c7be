package procfd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestList: both ends of a fresh pipe are listed under their numbers, with
// the end each one is.
func TestList(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fds, err := List(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]FD{}
	for _, f := range fds {
		got[f.Num] = f
	}
	rf, wf := got[int(r.Fd())], got[int(w.Fd())]
	if rf.Target == "" || rf.Target != wf.Target {
		t.Fatalf("pipe ends listed as %v and %v, want one pipe:[INO] target", rf, wf)
	}
	if rf.Write() || !wf.Write() {
		t.Errorf("read end Write()=%v, write end Write()=%v; want false, true", rf.Write(), wf.Write())
	}
	if !rf.CloseOnExec() || !wf.CloseOnExec() {
		t.Errorf("os.Pipe's ends: CloseOnExec() %v, %v; want true, true", rf.CloseOnExec(), wf.CloseOnExec())
	}
	if _, err := List(-1); err == nil {
		t.Errorf("List(-1): no error")
	}
}

// TestDescendants: a shell's two children are found below it, not the
// shell itself.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `sleep 100 & sleep 101 & echo ready; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The children first: the shell's wait reaps them, then it exits.
		below, _ := Descendants(cmd.Process.Pid)
		for _, p := range below {
			if pr, err := os.FindProcess(p); err == nil {
				pr.Kill()
			}
		}
		if len(below) == 0 {
			cmd.Process.Kill()
		}
		cmd.Wait()
	}()
	var line string
	if _, err := fmt.Fscanln(out, &line); err != nil || line != "ready" {
		t.Fatalf("handshake: %q %v", line, err)
	}
	below, err := Descendants(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(below) != 2 || slices.Contains(below, cmd.Process.Pid) {
		t.Errorf("descendants of the shell: %v, want its two sleeps", below)
	}
}

// TestDifferences: a child given only 0-2 matches; one given a pipe's
// write end as fd 3 is reported, with the owner's descriptor on that pipe.
func TestDifferences(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		name  string
		extra []*os.File
		want  int // differences
	}{
		{"clean", nil, 0},
		{"leaked write end", []*os.File{w}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", "read -r x")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = out, out, tt.extra
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); cmd.Wait() }()
			owner, err := List(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			want := map[int]string{0: "pipe:[", 1: out.Name(), 2: out.Name()}
			for _, f := range owner {
				if f.Num > 2 && !f.CloseOnExec() && f.Num != 3 {
					want[f.Num] = f.Target // inherited from this test's runner: every child has it
				}
			}
			diff, err := Settled(cmd.Process.Pid, want, owner, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(diff) != tt.want {
				t.Fatalf("differences %q, want %d", diff, tt.want)
			}
			if tt.want > 0 && !strings.Contains(diff[0], fmt.Sprintf("%d→pipe:[", w.Fd())) {
				t.Errorf("difference %q does not name the owner's descriptor %d", diff[0], w.Fd())
			}
		})
	}
}
