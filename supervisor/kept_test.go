package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"

	"golang.org/x/sys/unix"
)

// keptOf lists the kept cgroups of owner o.
func keptOf(t *testing.T, o *Owner) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(o.tree.base, keptDir, "*."+o.name+"_*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func gone(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist)
}

// TestKeptCgroupRemoved checks that the cgroup of a Survive spawn is
// removed by whoever sees its group gone, and never while a process lives
// in it. Kept cgroups exist in cgroup mode only; in pgroup mode a Survive
// spawn has none, which the last case checks.
func TestKeptCgroupRemoved(t *testing.T) {
	env := []string{"PATH=" + os.Getenv("PATH")}
	survive := func(ctx context.Context, o *Owner, argv ...string) (*Child, error) {
		return o.SpawnOwned(ctx, Spec{Unit: "kept", Argv: argv, Env: env, Survive: true,
			Ownership: "persist_on_release", Reason: "test of kept cgroups"})
	}
	if ok, why := cgroupAvailable(); !ok {
		t.Logf("cgroup mode not exercised: %s", why)
	} else {
		o := newTestOwner(t, Options{Mode: ModeCgroup, StateDir: t.TempDir()})
		defer o.Close()
		for _, tc := range []struct {
			name string
			run  func(t *testing.T) (dir string, err error)
		}{
			{"stopped", func(t *testing.T) (string, error) {
				c, err := survive(t.Context(), o, "sleep", "1000")
				if err != nil {
					t.Fatal(err)
				}
				if gone(c.Cgroup) || filepath.Base(filepath.Dir(c.Cgroup)) != keptDir {
					t.Fatalf("cgroup of a Survive spawn: got %q, want an existing dir in %s", c.Cgroup, keptDir)
				}
				return c.Cgroup, o.Stop(t.Context(), c.Group, syscall.SIGTERM, time.Second)
			}},
			{"leader exited", func(t *testing.T) (string, error) {
				c, err := survive(t.Context(), o, "true")
				if err != nil {
					t.Fatal(err)
				}
				<-c.Done()
				return c.Cgroup, nil
			}},
			{"re-adopted, released once empty", func(t *testing.T) (string, error) {
				c, err := survive(t.Context(), o, "sleep", "1000")
				if err != nil {
					t.Fatal(err)
				}
				if err := o.Own(t.Context(), c.Group); err != nil {
					t.Fatal(err)
				}
				if err := o.ReleaseOnceEmpty(t.Context(), c.Group); err != nil {
					t.Fatal(err)
				}
				if gone(c.Cgroup) {
					t.Fatal("kept cgroup removed while its process lives")
				}
				syscall.Kill(c.PGID, syscall.SIGKILL)
				<-c.Done()
				if !testkit.Within(10*time.Second, func() bool { return o.Status().Groups == 0 }) {
					t.Fatal("group not released once empty")
				}
				return c.Cgroup, nil
			}},
			{"ledger write failed", func(t *testing.T) (string, error) {
				release := make(chan struct{})
				o.jr.mu.Lock()
				o.jr.held = func() { <-release }
				o.jr.mu.Unlock()
				defer func() {
					o.jr.mu.Lock()
					o.jr.held = nil
					o.jr.mu.Unlock()
					close(release)
				}()
				before := keptOf(t, o)
				ctx, cancel := context.WithCancel(t.Context())
				cancel() // the record's write is not awaited: the spawn fails
				if _, err := survive(ctx, o, "sleep", "1000"); !errors.Is(err, context.Canceled) {
					t.Fatalf("spawn whose record is not written: got %v, want context.Canceled", err)
				}
				if after := keptOf(t, o); len(after) != len(before) {
					return after[len(after)-1], nil
				}
				return "", nil
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dir, err := tc.run(t)
				if err != nil {
					t.Fatal(err)
				}
				if dir != "" && !gone(dir) {
					t.Errorf("kept cgroup %s left after its group was gone", dir)
				}
			})
		}
		if left := keptOf(t, o); len(left) > 0 {
			t.Errorf("kept cgroups left: %v", left)
		}
	}
	t.Run("pgroup mode", func(t *testing.T) {
		o := newTestOwner(t, Options{Mode: ModePGroup, StateDir: t.TempDir()})
		defer o.Close()
		c, err := survive(t.Context(), o, "true")
		if err != nil {
			t.Fatal(err)
		}
		<-c.Done()
		if c.Cgroup != "" {
			t.Errorf("cgroup of a Survive spawn in pgroup mode: got %q, want none", c.Cgroup)
		}
	})
}

// TestSweepDeadOwners checks that an owner's start removes the empty
// cgroups dead owners left (their subtrees and kept cgroups), and nothing
// that holds a process or belongs to a live owner.
func TestSweepDeadOwners(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skipf("no cgroups to sweep in pgroup mode: %s", why)
	}
	probe, err := New(Options{Mode: ModeCgroup})
	if err != nil {
		t.Fatal(err)
	}
	base := probe.tree.base
	probe.Close()

	sleeper := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	name := func(pid int) string {
		t.Helper()
		id, err := proc.Read(pid)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d_%d", id.PID, id.StartTime)
	}
	dead := func() string {
		cmd := sleeper()
		n := name(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		return n
	}
	dead1, dead2, dead3, live := dead(), dead(), dead(), name(sleeper().Process.Pid)
	kept := filepath.Join(base, keptDir)
	cases := []struct {
		name string
		dir  string
		want bool // removed
	}{
		{"dead owner's subtree", filepath.Join(base, "hermes-"+dead1), true},
		{"dead owner's empty group", filepath.Join(base, "hermes-"+dead1, "u."+dead1+"_1"), true},
		{"dead owner's subtree holding a process", filepath.Join(base, "hermes-"+dead2), false},
		{"dead owner's group holding a process", filepath.Join(base, "hermes-"+dead2, "u."+dead2+"_1"), false},
		{"dead owner's empty group beside one", filepath.Join(base, "hermes-"+dead2, "u."+dead2+"_2"), true},
		{"live owner's empty subtree", filepath.Join(base, "hermes-"+live), false},
		{"dead owner's empty kept group", filepath.Join(kept, "u."+dead1+"_3"), true},
		{"dead owner's kept group holding a process", filepath.Join(kept, "u."+dead1+"_4"), false},
		{"live owner's empty kept group", filepath.Join(kept, "u."+live+"_1"), false},
		// An owner of another PID namespace whose pid here names a dead
		// process (or none) is not dead.
		{"another namespace's owner's subtree", filepath.Join(base, "hermes-"+dead3), false},
		{"another namespace's owner's empty group", filepath.Join(base, "hermes-"+dead3, "u."+dead3+"_1"), false},
		{"another namespace's owner's empty kept group", filepath.Join(kept, "u."+dead3+"_2"), false},
	}
	otherNS := []string{filepath.Join(base, "hermes-"+dead3), filepath.Join(base, "hermes-"+dead3, "u."+dead3+"_1"), filepath.Join(kept, "u."+dead3+"_2")}
	busy := []string{filepath.Join(base, "hermes-"+dead2, "u."+dead2+"_1"), filepath.Join(kept, "u."+dead1+"_4")}
	if err := os.Mkdir(kept, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	for _, d := range []string{"hermes-" + dead1, "hermes-" + dead2, "hermes-" + dead3, "hermes-" + live} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		if err := os.Mkdir(c.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
	for _, d := range otherNS {
		if err := unix.Setxattr(d, nsAttr, []byte("pid:[1]"), 0); err != nil {
			t.Fatalf("mark %s as another namespace's: %v (user xattrs on cgroupfs need Linux 5.7)", d, err)
		}
	}
	t.Cleanup(func() {
		for _, d := range busy {
			killCgroup(d)
			removeWhenEmpty(d, 5*time.Second)
		}
		for i := len(cases) - 1; i >= 0; i-- { // groups before their subtrees
			os.Remove(cases[i].dir)
		}
	})
	var procs []*exec.Cmd
	for _, d := range busy {
		cmd := sleeper()
		// Another owner on the machine (a test of another package running
		// at the same time) may sweep this empty cgroup of a dead owner
		// before the sleeper is in it: make it again and retry.
		var err error
		for try := 0; try < 20; try++ {
			if err = os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); !errors.Is(err, os.ErrNotExist) {
				break
			}
			os.MkdirAll(d, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}

	o := newTestOwner(t, Options{Mode: ModeCgroup})
	defer o.Close()
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(o.tree.root, nsAttr, buf); err != nil || string(buf[:n]) != ownNamespace() {
		t.Errorf("the owner's subtree %s carries %s %q (%v), want its PID namespace %q", o.tree.root, nsAttr, buf[:max(n, 0)], err, ownNamespace())
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := gone(c.dir); got != c.want {
				t.Errorf("%s removed: got %v, want %v", c.dir, got, c.want)
			}
		})
	}
	for _, cmd := range procs {
		if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
			t.Errorf("process %d in a swept hierarchy: %v, want alive", cmd.Process.Pid, err)
		}
	}
}
