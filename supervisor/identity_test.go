package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hermes-units/hermes/proc"
)

// TestOwnRevalidatesLeader: Own checks the leader's identity at the moment
// of the call: a recycled pid (another start time) is ErrUnsafe, an exited
// leader proc.ErrGone; neither is registered.
func TestOwnRevalidatesLeader(t *testing.T) {
	o := newTestOwner(t, Options{Mode: ModePGroup})
	defer o.Close()

	live, recycled := recycledGroup(t)
	exited, cmd := sleepGroup(t, "ext")
	cmd.Process.Kill()
	cmd.Wait()

	for _, tc := range []struct {
		name string
		g    Group
		want error
	}{
		{"recycled pid", recycled, ErrUnsafe},
		{"exited leader", exited, proc.ErrGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := o.Own(t.Context(), tc.g); !errors.Is(err, tc.want) {
				t.Errorf("Own: got %v, want %v", err, tc.want)
			}
			wantGroups(t, o, 0, "after a refused Own")
		})
	}
	if err := o.Own(t.Context(), live); err != nil {
		t.Fatalf("Own of a live group: %v", err)
	}
	wantGroups(t, o, 1, "after Own of the live group")
}

// recycledGroup starts a group outside any owner (sleepGroup) and returns
// it, and the same group as if its leader's pid had been recycled since
// (another start time).
func recycledGroup(t *testing.T) (live, recycled Group) {
	t.Helper()
	live, _ = sleepGroup(t, "ext")
	recycled = live
	recycled.Leader.StartTime++
	return live, recycled
}

// TestStopSparesStranger: Stop of a group this owner did not register,
// whose leader pid now belongs to another process (a recycled pid), sends
// no signal to that process.
func TestStopSparesStranger(t *testing.T) {
	o := newTestOwner(t, Options{Mode: ModePGroup})
	defer o.Close()
	g, stranger := recycledGroup(t)
	if err := o.Stop(t.Context(), stranger, syscall.SIGKILL, 0); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !g.Leader.Alive() {
		t.Errorf("the process holding the recycled pid %d was killed", g.Leader.PID)
	}
	if err := o.Stop(t.Context(), g, syscall.SIGTERM, 0); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if g.Leader.Alive() {
		t.Errorf("group %d still alive after Stop with its true identity", g.PGID)
	}
}

// TestInCgroup checks the membership test that guards each per-member
// signal in cgroup mode, and that a cgroup outside the owner's hierarchy is
// not trusted.
func TestInCgroup(t *testing.T) {
	mount := proc.CgroupMount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	rel, err := ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	if !inCgroup(os.Getpid(), filepath.Join(mount, rel), mount) {
		t.Errorf("inCgroup(self, %s): got false, want true", filepath.Join(mount, rel))
	}
	if inCgroup(os.Getpid(), filepath.Join(mount, rel, "not-here"), mount) {
		t.Errorf("inCgroup(self, a child dir): got true, want false")
	}
	o := &Owner{}
	if g := o.foreignCgroupLocked(Group{Cgroup: filepath.Join(mount, "elsewhere")}); g.Cgroup != "" {
		t.Errorf("cgroup kept without a hermes tree: %q", g.Cgroup)
	}
	o.tree = &cgroupTree{base: filepath.Join(mount, "hermes")}
	for dir, keep := range map[string]bool{
		filepath.Join(mount, "hermes", "u.1"): true,
		filepath.Join(mount, "other", "u.1"):  false,
		mount + "/hermes/../other":            false,
	} {
		if got := o.foreignCgroupLocked(Group{Cgroup: dir}).Cgroup != ""; got != keep {
			t.Errorf("cgroup %s kept: got %v, want %v", dir, got, keep)
		}
	}
}
