package supervisor

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// family is one row of the survivors matrix.
type family struct {
	name     string
	kind     string // child kind (see playChild)
	lines    int    // processes per child tree
	n        int    // children per owner
	owners   int    // owners killed together (all share one state dir)
	expect   int    // survivors expected after the owners' SIGKILL
	control  int    // processes of the control owner that must be alive
	release  bool
	own      bool // the owner adopts an external group started by the test
	killSup  bool // kill the supervisor first, let the owner restart it
	hold     bool // killSup: the owner stops once the new supervisor is launched
	pause    bool // kill the owner between spawn and registration
	killer   bool // the unit's script kills its owner (see escapePrologue)
	hermesct bool // the owner is "hermesctl run"
	// escapees: escapee groups each child tree makes. With the portable
	// backend (no subreaper) the row kills the owner only once its scans
	// have registered them all (see portableLimit).
	escapees int
	ledger   int // ledger entries expected before the kill (0: not checked)
	// cgroup: the owners (under test and control) run in a cgroup of this
	// path below a fresh test cgroup, where cgroup v2 is writable: their
	// subtrees, and every cgroup they register, have odd paths.
	cgroup string
	cgdir  string // set by runRow: the absolute dir of cgroup
	script string // kind "script": the sh script each child runs
}

var families = []family{
	{name: "simple child", kind: "simple", lines: 1, n: 1, owners: 1, control: 1},
	{name: "multi-process tree", kind: "tree", lines: 3, n: 1, owners: 1, control: 3},
	{name: "descendant ignoring stdin EOF", kind: "stdin-eof", lines: 2, n: 1, owners: 1, control: 2},
	{name: "TERM-ignoring child", kind: "ignore-term", lines: 1, n: 1, owners: 1, control: 1},
	{name: "setsid + double-fork escapees", kind: "escapee", lines: 3, n: 1, owners: 1, control: 3, escapees: 2},
	{name: "foreground hermesctl run", kind: "escapee", lines: 3, n: 1, owners: 1, control: 4, hermesct: true, escapees: 2},
	{name: "adopted external group (Own)", kind: "simple", lines: 1, n: 1, owners: 1, control: 2, own: true},
	{name: "released group (Release)", kind: "simple", lines: 1, n: 1, owners: 1, expect: 1, control: 1, release: true},
	{name: "supervisor killed, then owner", kind: "tree", lines: 3, n: 1, owners: 1, control: 3, killSup: true},
	{name: "owner killed as it restarts its supervisor", kind: "tree", lines: 3, n: 1, owners: 1, control: 3, killSup: true, hold: true},
	{name: "killed between spawn and registration", kind: "simple", lines: 0, n: 1, owners: 1, control: 1, pause: true},
	{name: "3 owners x 15 children", kind: "simple", lines: 1, n: 15, owners: 3, control: 15, ledger: 45},
	{name: "owner's cgroup path with a space", kind: "tree", lines: 3, n: 1, owners: 1, control: 3, cgroup: "my units/with space"},
	{name: "owner's cgroup path with .. names", kind: "tree", lines: 3, n: 1, owners: 1, control: 3, cgroup: "a..b/.../c.."},
	{name: "owner's cgroup path over 256 bytes", kind: "tree", lines: 3, n: 1, owners: 1, control: 3,
		cgroup: strings.Repeat("l", 120) + "/" + strings.Repeat("m", 120) + "/" + strings.Repeat("n", 40)},
}

const testGrace = 500 * time.Millisecond

// setup is one column of the survivors matrix: a containment mode and a
// backend.
type setup struct {
	mode    Mode
	backend Backend
}

func (s setup) String() string {
	if s.backend == BackendPortable {
		return string(s.mode) + "+portable"
	}
	return string(s.mode)
}

// setups are the columns the matrix runs: each mode this machine has
// (modes), and pgroup mode with the portable backend, darwin's behaviour
// (no subreaper, the script on ps).
func setups(t *testing.T) []setup {
	t.Helper()
	var out []setup
	for _, m := range modes(t) {
		out = append(out, setup{mode: m, backend: BackendNative})
	}
	return append(out, setup{mode: ModePGroup, backend: BackendPortable})
}

// portableLimit says why row f cannot hold in full without a subreaper,
// and what the row checks instead; "" when it holds as it is.
//
// A double-forked daemon whose middle process exits at once is
// re-parented to init before the owner sees it: only the owner's next
// scan (at most escapeeScan later) finds it, by its tags, and registers
// its group; the supervisor's death sweep on the ps path follows parent
// links and cannot reach it. The rows whose owner the test can ask
// (playOwner) are killed once that scan has registered every escapee
// group, and then hold in full. hermesctl run cannot be asked: its row
// checks that everything but the daemons died, and counts those apart.
func portableLimit(f family) string {
	if f.hermesct && f.escapees > 0 {
		return "a double-forked daemon re-parented to init dies with hermesctl run only if a scan found it before the kill; the rest of the tree must die"
	}
	return ""
}

// ownerProc is an owner process under test.
type ownerProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	spawn int // pause rows: the spawned child's pid
	sup   int // killer rows: the supervisor's pid, printed before the spawn
}

var (
	hermesctlOnce sync.Once
	hermesctlBin  string
	hermesctlErr  error
)

// buildHermesctl builds cmd/hermesctl once per test binary run.
func buildHermesctl(t *testing.T) string {
	t.Helper()
	hermesctlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hermesctl-test")
		if err != nil {
			hermesctlErr = err
			return
		}
		hermesctlBin = filepath.Join(dir, "hermesctl")
		out, err := exec.Command("go", "build", "-o", hermesctlBin, "../cmd/hermesctl").CombinedOutput()
		if err != nil {
			hermesctlErr = fmt.Errorf("go build hermesctl: %v\n%s", err, out)
		}
	})
	if hermesctlErr != nil {
		t.Skipf("cannot build hermesctl: %v", hermesctlErr)
	}
	return hermesctlBin
}

// startOwner starts one owner of f with children marked by marker and waits
// until every child tree is ready.
func startOwner(t *testing.T, f family, su setup, marker, state string, external int) *ownerProc {
	t.Helper()
	mode := su.mode
	var cmd *exec.Cmd
	if f.hermesct {
		cmd = exec.Command(buildHermesctl(t), "run", "--mode", string(mode), "--grace", testGrace.String(), "--state", state, "--", os.Args[0])
		cmd.Env = append(os.Environ(), envHelper+"=child", envKind+"="+f.kind, envRow+"="+marker, BackendEnv+"="+string(su.backend))
	} else {
		cmd = exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envHelper+"=owner", envKind+"="+f.kind, envChildRow+"="+marker,
			envMode+"="+string(mode), envBackend+"="+string(su.backend), envState+"="+state, envN+"="+strconv.Itoa(f.n), envLines+"="+strconv.Itoa(f.lines),
			envGraceMS+"="+strconv.Itoa(int(testGrace.Milliseconds())))
		if f.release {
			cmd.Env = append(cmd.Env, envRelease+"=1")
		}
		if f.script != "" {
			cmd.Env = append(cmd.Env, envScript+"="+f.script)
		}
		if f.pause {
			cmd.Env = append(cmd.Env, envPause+"=1")
		}
		if f.hold {
			cmd.Env = append(cmd.Env, envHold+"=1")
		}
		if f.killer {
			cmd.Env = append(cmd.Env, envKiller+"=1")
		}
		if external > 0 {
			cmd.Env = append(cmd.Env, envOwn+"="+strconv.Itoa(external))
		}
	}
	if f.cgdir != "" {
		fd, err := os.Open(f.cgdir)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		if err := testkit.IntoCgroup(cmd, int(fd.Fd())); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Stderr = os.Stderr
	in, out := testkit.StartPiped(t, cmd)
	p := &ownerProc{cmd: cmd, in: in, out: out}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	want := 1
	if f.hermesct {
		want = f.lines
	}
	for range want {
		l, err := p.out.ReadString('\n')
		if err != nil {
			t.Fatalf("owner %d did not get ready: %v", cmd.Process.Pid, err)
		}
		if pid, ok := strings.CutPrefix(strings.TrimSpace(l), "spawned "); ok {
			p.spawn, _ = strconv.Atoi(pid)
		}
		if pid, ok := strings.CutPrefix(strings.TrimSpace(l), "supervisor "); ok {
			p.sup, _ = strconv.Atoi(pid)
		}
	}
	return p
}

// external starts a process group outside any owner, for Own rows.
func external(t *testing.T, marker string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envHelper+"=child", envKind+"=simple", envRow+"="+marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := testkit.StartOutput(t, cmd)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

type survivorsRow struct {
	family, mode    string
	expect, found   int
	control, contOK int
	daemons         int    // double-forked daemons among found (rows with a limit)
	limit           string // what the row cannot hold here (portableLimit)
}

func TestSurvivors(t *testing.T) {
	var mu sync.Mutex
	var table []survivorsRow
	t.Cleanup(func() {
		var b strings.Builder
		fmt.Fprintf(&b, "\n%-40s %-15s %-9s %-6s %s\n", "family", "mode", "expected", "found", "control alive")
		for _, r := range table {
			fmt.Fprintf(&b, "%-40s %-15s %-9d %-6d %d/%d\n", r.family, r.mode, r.expect, r.found, r.contOK, r.control)
		}
		for _, r := range table {
			if r.limit != "" {
				fmt.Fprintf(&b, "limit, %s (%s): %s; daemons left: %d\n", r.family, r.mode, r.limit, r.daemons)
			}
		}
		t.Log(b.String())
	})
	for _, su := range setups(t) {
		for i, f := range families {
			t.Run(su.String()+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				row := survivorsRow{family: f.name, mode: su.String(), expect: f.expect, control: f.control}
				if su.backend == BackendPortable {
					row.limit = portableLimit(f)
				}
				marker := fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(su.String(), "+", "_"), i, os.Getpid())
				row.found, row.contOK, row.daemons = runRow(t, f, su, marker)
				mu.Lock()
				table = append(table, row)
				mu.Unlock()
				if row.limit != "" {
					// What holds: everything but the daemons died.
					if row.found-row.daemons != f.expect || row.daemons > f.n*f.owners {
						t.Errorf("survivors after owner SIGKILL: got %d (%d of them double-forked daemons), want %d besides at most %d daemons (%s)",
							row.found, row.daemons, f.expect, f.n*f.owners, row.limit)
					}
				} else if row.found != f.expect {
					t.Errorf("survivors after owner SIGKILL: got %d, want %d", row.found, f.expect)
				}
				if row.contOK != f.control {
					t.Errorf("control owner's processes alive: got %d, want %d", row.contOK, f.control)
				}
			})
		}
	}
}

// runRow plays one row: a control owner and the owner(s) under test; kills
// the latter with SIGKILL; returns the survivors and the control's live
// processes.
func runRow(t *testing.T, f family, su setup, marker string) (found, control, daemons int) {
	mode := su.mode
	victim, ctl := marker+"-v", marker+"-c"
	t.Cleanup(func() { killMarked(victim); killMarked(ctl) })
	if f.cgroup != "" {
		f.cgdir = oddCgroup(t, marker, f.cgroup, victim, ctl)
	}
	ctlExt, vExt := 0, 0
	if f.own {
		ctlExt, vExt = external(t, ctl), external(t, victim)
	}
	cf := f
	cf.pause, cf.hold, cf.owners = false, false, 1
	if f.pause {
		cf.lines = 1
	}
	c := startOwner(t, cf, su, ctl, t.TempDir(), ctlExt)

	state := t.TempDir()
	var owners []*ownerProc
	for range f.owners {
		owners = append(owners, startOwner(t, f, su, victim, state, vExt))
	}
	if mode == ModeCgroup {
		// A released group keeps its owner's cgroup subtree; remove what
		// the killed processes leave behind.
		t.Cleanup(func() {
			killMarked(victim) // runs before the cleanup registered earlier
			killMarked(ctl)
			for _, o := range append(owners, c) {
				dirs, _ := filepath.Glob(filepath.Join(proc.CgroupMount(), "hermes-"+strconv.Itoa(o.cmd.Process.Pid)+"_*"))
				for _, d := range dirs {
					subs, _ := filepath.Glob(filepath.Join(d, "*.*_*_*"))
					for _, s := range subs {
						testkit.Within(2*time.Second, func() bool { return os.Remove(s) == nil || os.IsNotExist(os.Remove(s)) })
					}
					os.Remove(d)
				}
			}
		})
	}
	if f.ledger > 0 {
		l, err := ledger.Open(state)
		if err != nil {
			t.Fatal(err)
		}
		// An owned spawn's record trails its registration by one group
		// commit (SpawnOwned only queues it): wait for the records, with a
		// deadline, rather than read the ledger once.
		var es []ledger.Entry
		if !testkit.Within(10*time.Second, func() bool {
			es, err = l.Entries(t.Context())
			return err == nil && len(es) >= f.ledger
		}) || len(es) != f.ledger {
			t.Errorf("ledger entries of %d owners: got %d (err %v), want %d", f.owners, len(es), err, f.ledger)
		}
	}
	if f.killSup {
		old := testkit.SupervisorOf(owners[0].cmd.Process.Pid)
		if old == 0 {
			t.Fatal("no supervisor found for the owner")
		}
		syscall.Kill(old, syscall.SIGKILL)
		if !testkit.Within(60*time.Second, func() bool { // generous: the owner restarts it at once, but a loaded machine runs it late
			s := testkit.SupervisorOf(owners[0].cmd.Process.Pid)
			return s != 0 && s != old
		}) {
			t.Fatal("the owner did not restart its supervisor")
		}
	}
	if su.backend == BackendPortable && !f.hermesct && f.escapees > 0 {
		// No subreaper: the orphaned daemon is the owner's to find, by
		// its tags, at its next scan. Killed only once every escapee
		// group is registered.
		for _, o := range owners {
			waitEscapees(t, o, f.escapees*f.n)
		}
	}
	var sups []int
	for _, o := range owners {
		if s := testkit.SupervisorOf(o.cmd.Process.Pid); s != 0 {
			sups = append(sups, s)
		}
		o.cmd.Process.Signal(syscall.SIGKILL)
	}
	for _, o := range owners {
		o.cmd.Wait()
	}
	// Done when every killed owner's supervisor has finished its work. An
	// exited supervisor may stay a zombie (orphans are re-parented to an
	// init that need not reap them): a zombie has finished.
	testkit.Within(testGrace+10*time.Second, func() bool {
		for _, s := range sups {
			if st, err := proc.ReadStat(s); err == nil && !st.Zombie() {
				return false
			}
		}
		return true
	})
	if f.pause {
		// No supervisor may exist yet (pgroup mode): the gated child must exit by itself.
		// A zombie is dead: some inits here never reap orphans.
		gone := func() bool { st, err := proc.ReadStat(owners[0].spawn); return err != nil || st.Zombie() }
		testkit.Within(5*time.Second, func() bool { return len(marked(victim)) == 0 && gone() })
		if !gone() {
			found++
		}
	}
	left := marked(victim)
	found += len(left)
	for _, pid := range left {
		if env, err := proc.Environ(pid); err == nil && slices.Contains(env, envKind+"=daemon") {
			daemons++
		}
	}
	control = len(marked(ctl))
	// Clean exit of the control: its owned children go with it.
	if f.hermesct {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	c.in.Close()
	c.cmd.Wait()
	return found, control, daemons
}

// waitEscapees asks owner o (playOwner) until it has registered n escapee
// groups, for up to 10 s: its janitor scans every escapeeScan.
func waitEscapees(t *testing.T, o *ownerProc, n int) {
	t.Helper()
	got := 0
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("%d escapee groups registered by owner %d", n, o.cmd.Process.Pid), func() bool {
		if _, err := io.WriteString(o.in, "status\n"); err != nil {
			t.Fatalf("ask owner %d: %v", o.cmd.Process.Pid, err)
		}
		l, err := o.out.ReadString('\n')
		if err != nil {
			t.Fatalf("owner %d: %v", o.cmd.Process.Pid, err)
		}
		var pid, groups int
		fmt.Sscanf(l, "%d %d %d", &pid, &groups, &got)
		return got >= n
	})
}

// oddCgroup creates the cgroup path below a fresh test cgroup named after
// marker and returns its dir; at the end of the test, once the processes
// marked victim and ctl are gone, it removes it all. Without a writable
// cgroup v2 hierarchy it returns "" (the owners run where the test runs),
// and says so.
func oddCgroup(t *testing.T, marker, path, victim, ctl string) string {
	t.Helper()
	if ok, why := cgroupAvailable(); !ok {
		t.Logf("owners not placed in cgroup %q: %s", path, why)
		return ""
	}
	own, err := ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(proc.CgroupMount(), own, "hu-odd-"+marker)
	dir := filepath.Join(top, path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("create test cgroup %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if !testkit.Within(testGrace+10*time.Second, func() bool {
			killMarked(victim)
			killMarked(ctl)
			return removeTree(top)
		}) {
			t.Errorf("test cgroup %s still populated at the end", top)
		}
	})
	return dir
}
