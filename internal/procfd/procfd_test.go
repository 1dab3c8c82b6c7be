package procfd

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
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
