package supervisor

import (
	"errors"
	"os/exec"
	"testing"
)

// TestSpawnNotInPath: a program in no directory of the child's PATH is
// named, without the whole PATH, and matches exec.ErrNotFound.
func TestSpawnNotInPath(t *testing.T) {
	o, err := New(Options{Mode: ModePGroup})
	if err != nil {
		t.Fatal(err)
	}
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
