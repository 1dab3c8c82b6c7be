package supervisor

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// killedPipe is a fake supervisor whose exit reads as a kill: the owner
// starts the next one at once and replays to it, with no backoff.
type killedPipe struct{ *fakePipe }

func (killedPipe) killed() bool { return true }

// TestCgroupSpawnRegistersOnce: in cgroup mode a spawn sends the
// supervisor one line, the registration of its cgroup, answered before the
// child starts into it; the spawn does not wait for a second answer once
// the leader exists (the cgroup is what the supervisor kills). The
// leader's pgid and identity are not lost: a replay to the next supervisor
// carries them.
func TestCgroupSpawnRegistersOnce(t *testing.T) {
	if ok, why := cgroupAvailable(); !ok {
		t.Skipf("needs cgroup mode: %s", why)
	}
	var mu sync.Mutex
	var pipes []*fakePipe
	launch := func(_ time.Duration, _ int, _, _, _ string, replay [][]byte, reply func(int, error)) (deathPipe, error) {
		mu.Lock()
		p := &fakePipe{pid: 200000 + len(pipes), exited: make(chan struct{})}
		pipes = append(pipes, p)
		mu.Unlock()
		if len(replay) > 0 {
			p.Send(replay, reply)
		}
		return killedPipe{p}, nil
	}
	pipe := func(i int) *fakePipe {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(pipes) {
			return nil
		}
		return pipes[i]
	}
	o, err := newOwner(Options{Mode: ModeCgroup, Grace: testGrace}, launch, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	c, err := o.SpawnOwned(t.Context(), Spec{Unit: "once", Argv: []string{"sleep", "1000"}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	rel, ok := below(o.tree.base, c.Cgroup)
	if !ok {
		t.Fatalf("cgroup %s is not below %s", c.Cgroup, o.tree.base)
	}
	first := fmt.Sprintf("R s1 0 0 0 %s %s", c.Key, rel)
	if got := pipe(0).got(); !slices.Equal(got, []string{first}) {
		t.Errorf("lines sent for one spawn: got %q, want only the cgroup's registration %q", got, first)
	}
	pipe(0).exit()
	replay := fmt.Sprintf("R s1 %d %d %d %s %s", c.PGID, c.Leader.PID, c.Leader.StartTime, c.Key, rel)
	testkit.Eventually(t, 10*time.Second, "the replay to the next supervisor", func() bool {
		p := pipe(1)
		return p != nil && slices.ContainsFunc(p.got(), func(l string) bool { return strings.HasPrefix(l, "R s1 ") })
	})
	if got := pipe(1).got(); !slices.Equal(got, []string{replay}) {
		t.Errorf("replay: got %q, want %q (the leader's pgid and identity)", got, replay)
	}
}
