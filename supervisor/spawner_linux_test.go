package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// TestSpawnerOf: a spawn names its live owner by its own evidence, with
// its environment intact (tags) or erased by env -i (its cgroup in cgroup
// mode, its mark in pgroup mode); a process no owner spawned names none,
// nor does one whose tags name an owner that has exited.
func TestSpawnerOf(t *testing.T) {
	self, err := proc.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			o := newTestOwner(t, Options{Mode: mode, Grace: testGrace})
			defer o.Close()
			for _, argv := range [][]string{{"sleep", "1000"}, {"env", "-i", "sleep", "1000"}} {
				c, err := o.SpawnOwned(t.Context(), Spec{Unit: "s", Argv: argv, Env: []string{"PATH=" + os.Getenv("PATH")}})
				if err != nil {
					t.Fatal(err)
				}
				pid := c.Leader.PID
				testkit.Eventually(t, testGrace*20, fmt.Sprintf("%d running sleep", pid), func() bool {
					st, err := proc.ReadStat(pid)
					return err == nil && st.Comm == "sleep"
				})
				if got, ok := SpawnerOf(pid); !ok || got.PID != self.PID || got.StartTime != self.StartTime {
					t.Errorf("SpawnerOf(%d) for %q = %v, %v; want this owner %v", pid, argv, got, ok, self)
				}
				if err := o.Stop(t.Context(), c.Group, syscall.SIGKILL, 0); err != nil {
					t.Fatal(err)
				}
			}
		})
	}

	dead := exec.Command("sleep", "1000")
	deadID := testkit.StartIdentified(t, dead)
	dead.Process.Kill()
	dead.Wait()
	live := exec.Command("sleep", "1000")
	liveID := testkit.StartIdentified(t, live)
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	for _, tc := range []struct {
		name string
		env  []string
		want bool
	}{
		{"no owner's", nil, false},
		{"an exited owner's tags", []string{ledger.EnvOwner + "=" + deadID.String()}, false},
		{"a live owner's tags", []string{ledger.EnvOwner + "=" + liveID.String()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := exec.Command("sleep", "1000")
			c.Env = tc.env
			id := testkit.StartIdentified(t, c)
			t.Cleanup(func() { c.Process.Kill(); c.Wait() })
			// Start returns once the exec has begun: the new environment
			// shows in /proc a moment later.
			testkit.Eventually(t, 10*time.Second, fmt.Sprintf("%d's environment in /proc", id.PID), func() bool {
				env, err := proc.Environ(id.PID)
				return err == nil && len(env) > 0
			})
			got, ok := SpawnerOf(id.PID)
			if ok != tc.want || ok && got.PID != liveID.PID {
				t.Errorf("SpawnerOf = %v, %v; want %v (live owner %v)", got, ok, tc.want, liveID)
			}
		})
	}
}

// TestSpawnerOfOtherUser: a spawn that runs as another user, with its
// environment erased, in pgroup mode (no cgroup to name it) still names
// its owner: the owner marks it from a thread with that user's ids, since
// root is not always given CAP_SYS_RESOURCE, and the mark is read from
// /proc where prlimit is refused.
func TestSpawnerOfOtherUser(t *testing.T) {
	testkit.Nobody(t, "only root may start a process as another user")
	self, err := proc.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	o := newTestOwner(t, Options{Mode: ModePGroup, Grace: testGrace})
	defer o.Close()
	c, err := o.SpawnOwned(t.Context(), Spec{
		Unit: "s", Dir: "/", Argv: []string{"env", "-i", "sleep", "1000"},
		Env: []string{"PATH=" + os.Getenv("PATH")}, Exec: units.Exec{User: "nobody"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop(context.Background(), c.Group, syscall.SIGKILL, 0)
	pid := c.Leader.PID
	testkit.Eventually(t, testGrace*20, fmt.Sprintf("%d running sleep, its environment erased", pid), func() bool {
		st, err := proc.ReadStat(pid)
		env, eerr := proc.Environ(pid)
		return err == nil && st.Comm == "sleep" && eerr == nil && len(env) == 0
	})
	if got, ok := SpawnerOf(pid); !ok || got.PID != self.PID || got.StartTime != self.StartTime {
		t.Errorf("SpawnerOf(%d), a spawn as nobody with no environment = %v, %v; want this owner %v", pid, got, ok, self)
	}
}
