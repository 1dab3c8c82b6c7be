package supervisor

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSpawnNotInPath: a program in no directory of the child's PATH is
// named, without the whole PATH, and matches exec.ErrNotFound.
func TestSpawnNotInPath(t *testing.T) {
	o := newTestOwner(t, Options{Mode: ModePGroup})
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "web", Argv: []string{"no-such-program", "-v"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}})
	if err == nil {
		syscallKill(c.PGID)
		t.Fatalf("SpawnOwned of a missing program: no error")
	}
	const want = `spawn web: "no-such-program" is not in PATH`
	if err.Error() != want {
		t.Errorf("SpawnOwned: got %q, want %q", err, want)
	}
	var nf *NotFoundError
	if !errors.Is(err, exec.ErrNotFound) || !errors.As(err, &nf) || nf.Name != "no-such-program" {
		t.Errorf("SpawnOwned error %v: errors.Is(exec.ErrNotFound) %v, NotFoundError %+v; want both", err, errors.Is(err, exec.ErrNotFound), nf)
	}
}

// TestSpawnRelativeToWorkdir: a program named by a relative path is found
// in the child's working directory, as a shell finds ./serve.sh after a cd,
// not in the owner's.
func TestSpawnRelativeToWorkdir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(filepath.Join(dir, "serve.sh"), []byte("#!/bin/sh\necho ran in \"$PWD\" > out\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := newTestOwner(t, Options{Mode: ModePGroup})
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "web", Argv: []string{"./serve.sh"}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatalf("SpawnOwned of ./serve.sh in its workdir: %v", err)
	}
	<-c.Done()
	if c.Err() != nil {
		t.Fatalf("./serve.sh exited: %v", c.Err())
	}
	b, err := os.ReadFile(out)
	if got, want := string(b), "ran in "+dir+"\n"; err != nil || got != want {
		t.Errorf("got %q (%v), want %q", got, err, want)
	}
}
