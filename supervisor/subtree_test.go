package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// envIdleOwner selects the owner played by idleOwner (see init).
const envIdleOwner = "SUPERVISOR_IDLE_OWNER"

func init() {
	if os.Getenv(envIdleOwner) != "" {
		os.Exit(idleOwner())
	}
}

// idleOwner is an owner whose supervisor goes idle: it spawns a child that
// exits at once, waits until its supervisor has been closed for idleness
// (IdleClose 100 ms) and has exited, prints "idle ROOT EXISTS" (its cgroup
// subtree, - in pgroup mode, and whether it still exists), then spawns a
// child marked envChildRow and prints "spawned PID" or "error ERR", and
// waits to be killed.
func idleOwner() int {
	o, err := New(Options{Mode: Mode(os.Getenv(envMode)), Grace: testGrace, IdleClose: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 3
	}
	ctx := context.Background()
	c, err := o.SpawnOwned(ctx, Spec{Unit: "brief", Argv: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner: first spawn:", err)
		return 3
	}
	<-c.Done()
	first := o.Status().PID
	if !testkit.Within(20*time.Second, func() bool {
		st := o.Status()
		return st.PID == 0 && st.Groups == 0 && syscall.Kill(first, 0) != nil
	}) {
		fmt.Fprintln(os.Stderr, "owner: the supervisor did not go idle:", o.Status())
		return 3
	}
	root, exists := "-", false
	if o.tree != nil {
		root = o.tree.root
		_, err := os.Stat(root)
		exists = err == nil
	}
	fmt.Printf("idle %s %v\n", strconv.Quote(root), exists)
	r, w, _ := os.Pipe()
	env := append(os.Environ(), envHelper+"=child", envKind+"=simple", envRow+"="+os.Getenv(envChildRow), envIdleOwner+"=")
	c, err = o.SpawnOwned(ctx, Spec{Unit: "after-idle", Argv: []string{os.Args[0]}, Env: env, Stdout: w})
	w.Close()
	if err != nil {
		fmt.Printf("error %v\n", err)
	} else if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		fmt.Printf("error child not ready: %v\n", err)
	} else {
		fmt.Printf("spawned %d\n", c.Leader.PID)
	}
	forever()
	return 0
}

// TestSubtreeOutlivesIdleSupervisor: an owner whose supervisor exited for
// idleness keeps its cgroup subtree and can still spawn owned children;
// when the owner then dies, its children die and its subtree is removed.
func TestSubtreeOutlivesIdleSupervisor(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			marker := newMarker(t, "idle-"+string(mode))
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), envIdleOwner+"=1", envMode+"="+string(mode), envChildRow+"="+marker)
			cmd.Stderr = os.Stderr
			out := testkit.StartOutput(t, cmd)
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			owner := cmd.Process.Pid
			if mode == ModeCgroup {
				t.Cleanup(func() { removeOwnerCgroups(owner) })
			}
			line := func() string {
				t.Helper()
				l, err := out.ReadString('\n')
				if err != nil {
					t.Fatalf("owner %d: %v", owner, err)
				}
				return strings.TrimSpace(l)
			}
			var root string
			var exists bool
			var quoted string
			if _, err := fmt.Sscanf(line(), "idle %s %t", &quoted, &exists); err != nil {
				t.Fatal(err)
			}
			root, _ = strconv.Unquote(quoted)
			if mode == ModeCgroup && !exists {
				t.Errorf("the owner's cgroup subtree %s: gone once its supervisor exited for idleness, want it kept while the owner lives", root)
			}
			l := line()
			if !strings.HasPrefix(l, "spawned ") {
				t.Fatalf("owned spawn after the supervisor went idle: got %q, want spawned", l)
			}
			if got := len(marked(marker)); got != 1 {
				t.Fatalf("owned children alive after the spawn: got %d, want 1", got)
			}
			cmd.Process.Kill()
			cmd.Wait()
			if !testkit.Within(testGrace+10*time.Second, func() bool { return len(marked(marker)) == 0 }) {
				t.Errorf("owned child spawned after the idle close survived its owner: %v", marked(marker))
			}
			if mode == ModeCgroup {
				if !testkit.Within(testGrace+10*time.Second, func() bool { return gone(root) }) {
					t.Errorf("the owner's cgroup subtree %s outlived the owner", root)
				}
			}
		})
	}
}

// TestMkdirInRecreatesParent: a spawn whose owner subtree is gone creates
// it again.
func TestMkdirInRecreatesParent(t *testing.T) {
	parent := t.TempDir() + "/hermes-1_2"
	dir := parent + "/u.1_2_3"
	if err := mkdirIn(parent, dir); err != nil {
		t.Fatalf("mkdirIn with the parent gone: %v", err)
	}
	if err := mkdirIn(parent, dir); !errors.Is(err, os.ErrExist) {
		t.Errorf("mkdirIn of an existing dir: got %v, want ErrExist", err)
	}
}
