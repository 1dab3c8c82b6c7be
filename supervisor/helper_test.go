package supervisor

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"go.uber.org/goleak"
)

// The test binary is its own helper: with envHelper set it plays a child
// (envKind says which) or an owner instead of running the tests.
const (
	envHelper   = "SUPERVISOR_TEST_HELPER" // child | owner
	envKind     = "SUPERVISOR_TEST_KIND"   // child kind, see playChild
	envRow      = "SUPERVISOR_TEST_ROW"    // marker carried by every counted process
	envChildRow = "SUPERVISOR_TEST_CHILDROW"
	envMode     = "SUPERVISOR_TEST_MODE"
	envState    = "SUPERVISOR_TEST_STATE"
	envN        = "SUPERVISOR_TEST_N"       // children to spawn
	envLines    = "SUPERVISOR_TEST_LINES"   // ready lines each child tree prints
	envRelease  = "SUPERVISOR_TEST_RELEASE" // release the groups after spawning
	envOwn      = "SUPERVISOR_TEST_OWN"     // pid of an external group leader to adopt
	envPause    = "SUPERVISOR_TEST_PAUSE"   // stop between spawn and registration
	envHold     = "SUPERVISOR_TEST_HOLD"    // stop once a restarted supervisor is launched
	envGraceMS  = "SUPERVISOR_TEST_GRACE_MS"
	envBackend  = "SUPERVISOR_TEST_BACKEND"
	envScript   = "SUPERVISOR_TEST_SCRIPT" // kind script: the sh script the child runs
	// envKiller: the owner prints "supervisor PID" before it spawns, and
	// hands its children its own pid in envOwnerPID: their script kills it
	// (TestEscapes's early rows).
	envKiller   = "SUPERVISOR_TEST_KILLER"
	envOwnerPID = "ESCAPE_OWNER"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "child":
		playChild(os.Getenv(envKind))
	case "owner":
		os.Exit(playOwner())
	case "sigign":
		os.Exit(playSigIgn())
	default:
		// Helpers (owners, children) inherit the environment: under -race,
		// do not let each of them sleep a second at exit.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		// The survivors rows spend their time waiting for processes, not
		// computing: unless -parallel was given, run more of them at once
		// than there are CPUs.
		flag.Parse()
		explicit := false
		flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
		if !explicit {
			flag.Set("test.parallel", strconv.Itoa(max(runtime.GOMAXPROCS(0), 8)))
		}
		goleak.VerifyTestMain(m)
	}
}

// forever blocks until killed.
func forever() {
	for {
		time.Sleep(time.Hour)
	}
}

func ready() { os.Stdout.WriteString("ok\n") }

// sub starts this binary as a child of kind with the same environment.
func sub(kind string, attr *syscall.SysProcAttr, stdin *os.File) *exec.Cmd {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), envKind+"="+kind)
	c.Stdout, c.Stderr, c.SysProcAttr = os.Stdout, os.Stderr, attr
	if stdin != nil {
		c.Stdin = stdin
	}
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	return c
}

// playChild plays one process of a survivors family. Every process of the
// tree prints "ok" on stdout once it is in place.
func playChild(kind string) {
	switch kind {
	case "simple":
	case "daemon": // a double fork's daemon: as simple, told apart by its kind
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "tree": // two more processes in the same group
		sub("simple", nil, nil)
		sub("simple", nil, nil)
	case "stdin-eof": // a descendant whose stdin is at EOF and that lives on
		r, w, _ := os.Pipe()
		w.Close()
		sub("simple", nil, r)
	case "escapee": // a setsid child, and a double-forked daemon
		sub("simple", &syscall.SysProcAttr{Setsid: true}, nil)
		sub("double-fork", nil, nil)
	case "double-fork": // not counted: starts a setsid daemon and exits
		sub("daemon", &syscall.SysProcAttr{Setsid: true}, nil)
		os.Exit(0)
	case "script": // the shell script in envScript, which prints its own "ok"
		err := syscall.Exec(Shell, []string{"sh", "-c", os.Getenv(envScript)}, os.Environ())
		fmt.Fprintln(os.Stderr, "helper: exec sh:", err)
		os.Exit(3)
	default:
		fmt.Fprintln(os.Stderr, "unknown child kind", kind)
		os.Exit(2)
	}
	ready()
	forever()
}

// playOwner is an owner process: it spawns N children of envKind (their
// trees print envLines ready lines each), optionally releases them or
// adopts an external group, prints "ready", then answers "status" lines on
// stdin ("PID GROUPS ESCAPEES SCANNED ORPHANS": the supervisor's pid, the
// groups registered, the escapee groups found under them, when the last
// scan for escapees that ended began, in Unix ns, or 0, the orphan groups, the escapee
// and orphan registrations the supervisor has not answered yet) until EOF,
// when it closes the owner cleanly.
func playOwner() int {
	n, _ := strconv.Atoi(os.Getenv(envN))
	lines, _ := strconv.Atoi(os.Getenv(envLines))
	graceMS, _ := strconv.Atoi(os.Getenv(envGraceMS))
	var hooks *ownerHooks
	if os.Getenv(envPause) != "" {
		hooks = &ownerHooks{afterSpawn: func(pid int) {
			fmt.Printf("spawned %d\n", pid)
			forever()
		}}
	}
	if os.Getenv(envHold) != "" {
		launches := 0
		hooks = &ownerHooks{launched: func(int) {
			if launches++; launches > 1 { // a restart: the owner does nothing more
				forever()
			}
		}}
	}
	o, err := newOwner(Options{StateDir: os.Getenv(envState), Role: "worker", Mode: Mode(os.Getenv(envMode)),
		Backend: Backend(os.Getenv(envBackend)), Grace: time.Duration(graceMS) * time.Millisecond}, launchShell, hooks)
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 3
	}
	ctx := context.Background()
	r, w, _ := os.Pipe()
	env := append(os.Environ(), envHelper+"=child", envRow+"="+os.Getenv(envChildRow), envKind+"="+os.Getenv(envKind))
	if os.Getenv(envKiller) != "" {
		// The supervisor starts at the first registration, and the unit
		// kills this owner as soon as it runs: started here, so that its
		// pid can be told first.
		o.mu.Lock()
		err := o.startLocked()
		o.mu.Unlock()
		if err != nil {
			fmt.Fprintln(os.Stderr, "owner: start supervisor:", err)
			return 3
		}
		fmt.Printf("supervisor %d\n", o.Status().PID)
		env = append(env, envOwnerPID+"="+strconv.Itoa(os.Getpid()))
	}
	var kids []*Child
	for i := range n {
		c, err := o.SpawnOwned(ctx, Spec{Unit: fmt.Sprintf("u%d", i), Argv: []string{os.Args[0]}, Env: env, Stdout: w, Stderr: os.Stderr})
		if err != nil {
			fmt.Fprintln(os.Stderr, "owner:", err)
			return 3
		}
		kids = append(kids, c)
	}
	w.Close()
	br := bufio.NewReader(r)
	for range n * lines {
		if _, err := br.ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "owner: ready:", err)
			return 3
		}
	}
	if os.Getenv(envRelease) != "" {
		for _, c := range kids {
			if err := o.Release(ctx, c.Group); err != nil {
				fmt.Fprintln(os.Stderr, "owner:", err)
				return 3
			}
		}
	}
	if s := os.Getenv(envOwn); s != "" {
		pid, _ := strconv.Atoi(s)
		id, err := proc.Read(pid)
		if err == nil {
			err = o.Own(ctx, Group{Unit: "adopted", PGID: pid, Leader: id})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "owner: own:", err)
			return 3
		}
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		st := o.Status()
		o.mu.Lock()
		esc, unanswered := 0, 0
		for _, r := range o.regs {
			esc += len(r.esc)
			for _, e := range append([]*reg{r}, r.esc...) {
				if e.answered == nil {
					continue
				}
				select {
				case <-e.answered:
				default:
					unanswered++
				}
			}
		}
		scanned := o.scanDone
		o.mu.Unlock()
		var at int64
		if !scanned.IsZero() {
			at = scanned.UnixNano()
		}
		fmt.Printf("%d %d %d %d %d %d\n", st.PID, st.Groups, esc, at, len(st.Orphans), unanswered)
	}
	if err := o.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "owner: close:", err)
		return 3
	}
	return 0
}

// marked lists the live processes whose environment carries envRow=marker.
func marked(marker string) []int {
	pids, _ := proc.Find(func(proc.Stat) bool { return true })
	var out []int
	for _, pid := range pids {
		env, err := proc.Environ(pid)
		if err != nil {
			continue
		}
		for _, kv := range env {
			if kv == envRow+"="+marker {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// sleepGroup starts sleep leading a process group of its own, outside any
// owner, as unit. The test's end kills and reaps it; os.Process.Kill is
// safe there even once the test has reaped it itself (no stray signal to a
// recycled pid).
func sleepGroup(t *testing.T, unit string) (Group, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	id := testkit.StartIdentified(t, cmd)
	return Group{Unit: unit, PGID: id.PID, Leader: id}, cmd
}

// startReaped starts cmd and reaps it on a goroutine of its own: the
// channel it returns is closed once cmd is reaped. The test's end kills
// cmd (safe once reaped: no stray signal to a recycled pid) and waits for
// the reaping.
func startReaped(t *testing.T, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return done
}

// newMarker returns the marker (name and this process's pid) that the
// test's processes carry in envRow; the test's end kills every process
// carrying it.
func newMarker(t *testing.T, name string) string {
	marker := fmt.Sprintf("%s-%d", name, os.Getpid())
	t.Cleanup(func() { killMarked(marker) })
	return marker
}

// killMarked kills every process carrying marker (test cleanup).
func killMarked(marker string) {
	for _, pid := range marked(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// cgroupAvailable says whether cgroup mode works here, and why not.
func cgroupAvailable() (bool, string) {
	if proc.CgroupMount() == "" {
		return false, "no cgroup v2 hierarchy in /proc/self/mountinfo"
	}
	own, err := ownCgroup()
	if err != nil {
		return false, err.Error()
	}
	base := proc.CgroupMount() + own
	if err := os.Mkdir(base+"/hermes-probe", 0o755); err != nil && !os.IsExist(err) {
		return false, "cgroup " + base + " is not writable: " + err.Error()
	}
	defer os.Remove(base + "/hermes-probe")
	if _, err := os.Stat(base + "/hermes-probe/cgroup.kill"); err != nil {
		return false, "no cgroup.kill (kernel < 5.14)"
	}
	return true, ""
}

func modes(t *testing.T) []Mode {
	t.Helper()
	out := []Mode{ModePGroup}
	if ok, why := cgroupAvailable(); ok {
		out = append([]Mode{ModeCgroup}, out...)
	} else {
		t.Logf("cgroup mode not exercised: %s", why)
	}
	return out
}

// newTestOwner is New(opts), failing t at once when it fails. The caller
// closes the owner.
func newTestOwner(t testing.TB, opts Options) *Owner {
	t.Helper()
	o, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// startShell is launchShell with nothing to replay.
func startShell(grace time.Duration, ownerPGID int, cgBase, cgOwn, table string) (deathPipe, error) {
	return launchShell(grace, ownerPGID, cgBase, cgOwn, table, nil, nil)
}
