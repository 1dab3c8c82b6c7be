package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// The test binary is its own helper: with helperEnv set it plays one of the
// processes below instead of running the tests.
const helperEnv = "LEDGER_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "writer":
		os.Exit(helperWriter())
	case "holder":
		os.Exit(helperHolder())
	case "sleeper":
		os.Exit(helperSleeper())
	case "liner":
		os.Exit(helperLiner())
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// helperWriter waits for a line on stdin ("go"), then adds N entries one
// Add at a time, each led by the process LEADER_PID (alive for the test), and
// reports "done" or the error.
func helperWriter() int {
	dir, name := os.Getenv("LEDGER_DIR"), os.Getenv("WRITER_NAME")
	n, _ := strconv.Atoi(os.Getenv("WRITER_N"))
	leaderPID, _ := strconv.Atoi(os.Getenv("LEADER_PID"))
	l, err := Open(dir)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	leader, err := proc.Read(leaderPID)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	self, _ := proc.Self()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 1
	}
	for i := range n {
		e := Entry{Unit: fmt.Sprintf("%s-%d", name, i), Leader: leader, PGID: leaderPID, Owner: self, Role: "run", Ownership: "owned", Spawned: time.Now()}
		if err := l.Add(context.Background(), e); err != nil {
			fmt.Println("error:", err)
			return 1
		}
	}
	fmt.Println("done")
	return 0
}

// helperHolder takes the ledger lock, says "locked" and holds it until
// stdin closes.
func helperHolder() int {
	f, err := os.OpenFile(filepath.Join(os.Getenv("LEDGER_DIR"), LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// helperSleeper says "ready" and lives until stdin closes.
func helperSleeper() int {
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// helperLiner takes a place in the writers' line and keeps it, as a writer
// stopped while waiting would, until stdin closes.
func helperLiner() int {
	l, err := Open(os.Getenv("LEDGER_DIR"))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	t := l.enqueue()
	if t.own == nil {
		fmt.Println("error: no ticket")
		return 1
	}
	fmt.Println("queued", t.n)
	_, _ = io.Copy(io.Discard, os.Stdin)
	t.leave()
	return 0
}

// helper is a running helper process with its stdin and stdout.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startHelper starts the test binary as the named helper and waits for its
// first line, which must be want. Cleanup closes its stdin and reaps it.
func startHelper(t *testing.T, role string, env []string, attr *syscall.SysProcAttr, want string) *helper {
	t.Helper()
	cmd := testkit.Self(append([]string{helperEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = attr
	stdin, out := testkit.StartPiped(t, cmd)
	h := &helper{cmd: cmd, stdin: stdin, out: out}
	t.Cleanup(func() { h.stop() })
	if got := h.line(t); got != want {
		t.Fatalf("helper %s said %q, want %q", role, got, want)
	}
	return h
}

func (h *helper) line(t *testing.T) string {
	t.Helper()
	s, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper output: %v", err)
	}
	return strings.TrimSpace(s)
}

// stop closes stdin and reaps the helper (idempotent).
func (h *helper) stop() {
	h.stdin.Close()
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Wait()
	}
}

// selfEntry is an entry led by the test process: alive for the whole test.
func selfEntry(t *testing.T, unit string) Entry {
	t.Helper()
	id := testkit.Identity(t, os.Getpid())
	return Entry{
		Unit: unit, Leader: id, PGID: syscall.Getpgrp(), Argv: []string{"sleep", "1"},
		Owner: id, Role: "gateway", Ownership: "owned", Spawned: time.Now().UTC().Truncate(time.Second),
	}
}

// openDir opens the ledger in dir.
func openDir(t *testing.T, dir string) *Ledger {
	t.Helper()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func openTemp(t *testing.T) *Ledger { return openDir(t, t.TempDir()) }

// entriesIn opens the ledger in dir afresh and reads its entries.
func entriesIn(t *testing.T, dir string) []Entry {
	t.Helper()
	es, err := openDir(t, dir).Entries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// writersDone waits for each writer helper's last line, which must be
// "done", and reaps it.
func writersDone(t *testing.T, hs []*helper) {
	t.Helper()
	for i, h := range hs {
		if got := h.line(t); got != "done" {
			t.Errorf("writer %d: got %q, want done", i, got)
		}
		h.stop()
	}
}

func unitNames(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Unit)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	l := openTemp(t)
	ctx := t.Context()
	want := selfEntry(t, "api")
	want.Cgroup = ""
	want.Reason = "keeps the cache warm"
	want.Log = "/var/log/api.log"
	want.State = "released"
	want.Spawn = NewSpawnKey()
	if err := l.Add(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := l.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("got %+v, want [%+v]", got, want)
	}
	if err := l.Remove(ctx, func(e Entry) bool { return e.Unit == "api" }); err != nil {
		t.Fatal(err)
	}
	got, err = l.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("after Remove got %v, want none", unitNames(got))
	}
	if _, err := os.Stat(l.Path()); err != nil {
		t.Errorf("ledger file: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(l.Path()), tempPrefix+"*")); len(m) != 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
}

func TestUpdateErrorLeavesFile(t *testing.T) {
	l := openTemp(t)
	ctx := t.Context()
	if err := l.Add(ctx, selfEntry(t, "a")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(l.Path())
	errBoom := errors.New("boom")
	err := l.Update(ctx, func([]Entry) ([]Entry, error) { return nil, errBoom })
	if !errors.Is(err, errBoom) {
		t.Fatalf("got %v, want %v", err, errBoom)
	}
	after, _ := os.ReadFile(l.Path())
	if string(before) != string(after) {
		t.Errorf("file changed by a failed Update:\n%s\nwant\n%s", after, before)
	}
}

func TestAddRedactsArgv(t *testing.T) {
	l := openTemp(t)
	e := selfEntry(t, "bot")
	e.Argv = []string{"bot", "--token", "hunter2"}
	if err := l.Add(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("secret stored in the ledger file: %s", b)
	}
	// An Update that changes an entry cannot store a secret either.
	err = l.Update(t.Context(), func(es []Entry) ([]Entry, error) {
		es[0].Argv = []string{"bot", "--password=swordfish"}
		es[0].State = "released"
		return es, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b := mustRead(t, l.Path()); strings.Contains(string(b), "swordfish") || !strings.Contains(string(b), "released") {
		t.Errorf("after Update: %s", b)
	}
}

// TestConcurrentWriters: three owner processes add 15 entries each, one Add
// at a time, all at once; all 45 are kept.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	const owners, each = 3, 15
	var hs []*helper
	for i := range owners {
		env := []string{"LEDGER_DIR=" + dir, fmt.Sprintf("WRITER_NAME=owner%d", i), fmt.Sprintf("WRITER_N=%d", each), fmt.Sprintf("LEADER_PID=%d", os.Getpid())}
		hs = append(hs, startHelper(t, "writer", env, nil, "ready"))
	}
	// A reader without the lock never sees a half-written file.
	stop, readerDone := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, FileName))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err == nil {
				_, err = Parse(b)
			}
			if err != nil {
				readerDone <- err
				return
			}
		}
	}()
	for _, h := range hs {
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	writersDone(t, hs)
	close(stop)
	if err := <-readerDone; err != nil {
		t.Errorf("a reader saw a broken file: %v", err)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, FileName+".corrupt-*")); len(aside) != 0 {
		t.Errorf("files moved aside during concurrent writes: %v", aside)
	}
	got := entriesIn(t, dir)
	seen := map[string]bool{}
	for _, e := range got {
		seen[e.Unit] = true
	}
	if len(got) != owners*each || len(seen) != owners*each {
		t.Errorf("got %d entries (%d distinct), want %d", len(got), len(seen), owners*each)
	}
	for i := range owners {
		for j := range each {
			if u := fmt.Sprintf("owner%d-%d", i, j); !seen[u] {
				t.Errorf("entry %s lost", u)
			}
		}
	}
}

// TestStuckWriter: a process holding the lock forever makes a writer fail
// with ErrLocked instead of waiting with it.
func TestStuckWriter(t *testing.T) {
	dir := t.TempDir()
	h := startHelper(t, "holder", []string{"LEDGER_DIR=" + dir}, nil, "locked")
	l := openDir(t, dir)
	err := l.Add(t.Context(), selfEntry(t, "x"))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Add with the lock held elsewhere: got %v, want ErrLocked", err)
	}
	h.stop()
	if err := l.Add(t.Context(), selfEntry(t, "x")); err != nil {
		t.Errorf("Add after the holder left: %v", err)
	}
}

func TestContextEndsWait(t *testing.T) {
	dir := t.TempDir()
	startHelper(t, "holder", []string{"LEDGER_DIR=" + dir}, nil, "locked")
	l := openDir(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Add(ctx, selfEntry(t, "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestCorrupt: an unparseable file, or one of an unknown version, is moved
// aside intact and the ledger rebuilt from the live tagged group leaders of
// its own state directory: the leaders tagged with another directory, or
// with none, are other ledgers' (a gateway would re-adopt or stop them).
func TestCorrupt(t *testing.T) {
	owner := testkit.Identity(t, os.Getpid())
	spawn := NewSpawnKey()
	unit := "corrupt-" + spawn // unique among the processes of the machine
	tags := []string{EnvUnit + "=" + unit, EnvOwner + "=" + owner.String(), EnvSpawn + "=" + spawn, EnvOwnership + "=adoptable"}
	for _, tc := range []struct{ name, content string }{
		{"garbage", `{"version":1,"entries":[{"unit":`},
		{"unknown version", `{"version":99,"entries":[]}`},
		{"not json", "\x00\x01binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTemp(t)
			mine := append(slices.Clone(tags), EnvState+"="+l.Dir())
			leader := startHelper(t, "sleeper", mine, &syscall.SysProcAttr{Setpgid: true}, "ready")
			// A tagged process that does not lead its group is not an entry.
			startHelper(t, "sleeper", mine, nil, "ready")
			// Nor are the leaders of another state directory, or of none.
			other := append(slices.Clone(tags), EnvState+"="+t.TempDir())
			startHelper(t, "sleeper", other, &syscall.SysProcAttr{Setpgid: true}, "ready")
			startHelper(t, "sleeper", tags, &syscall.SysProcAttr{Setpgid: true}, "ready")
			lid, err := proc.Read(leader.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(l.Path(), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := l.Add(t.Context(), selfEntry(t, "new")); err != nil {
				t.Fatal(err)
			}
			aside, _ := filepath.Glob(l.Path() + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("files moved aside: %v, want one", aside)
			}
			if b, _ := os.ReadFile(aside[0]); string(b) != tc.content {
				t.Errorf("moved-aside content %q, want %q", b, tc.content)
			}
			got, err := l.Entries(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var found []Entry
			for _, e := range got {
				if e.Unit == unit {
					found = append(found, e)
				}
			}
			if len(found) != 1 {
				t.Fatalf("rebuilt entries for %s: %d, want 1 (all: %v)", unit, len(found), unitNames(got))
			}
			e := found[0]
			if e.Leader != lid || e.PGID != lid.PID || e.Owner.PID != owner.PID || e.Owner.StartTime != owner.StartTime || e.Spawn != spawn || e.Ownership != "adoptable" {
				t.Errorf("rebuilt %+v, want leader %v, owner %v, spawn %s, adoptable", e, lid, owner, spawn)
			}
			if len(e.Argv) == 0 || e.Argv[0] != cut(os.Args[0], MaxArgLen) {
				t.Errorf("rebuilt argv %q, want it to start with %q", e.Argv, os.Args[0])
			}
			if !slicesContain(unitNames(got), "new") {
				t.Errorf("the new entry is missing: %v", unitNames(got))
			}
		})
	}
}

// TestEntriesRepairsCorrupt: a reader meeting a corrupt file repairs it
// rather than failing.
func TestEntriesRepairsCorrupt(t *testing.T) {
	l := openTemp(t)
	if err := os.WriteFile(l.Path(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Entries(t.Context()); err != nil {
		t.Fatal(err)
	}
	if aside, _ := filepath.Glob(l.Path() + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("files moved aside: %v, want one", aside)
	}
	if _, err := Parse(mustRead(t, l.Path())); err != nil {
		t.Errorf("ledger after repair: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// group starts a sleeper leading a new process group and returns it with
// its identity.
func group(t *testing.T) (*helper, proc.Identity) {
	t.Helper()
	h := startHelper(t, "sleeper", nil, &syscall.SysProcAttr{Setpgid: true}, "ready")
	id, err := proc.Read(h.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return h, id
}

// TestPrune: a write drops the entries whose group is gone and keeps the
// live ones, including a group whose leader exited but whose member lives.
func TestPrune(t *testing.T) {
	l := openTemp(t)
	ctx := t.Context()
	live, liveID := group(t)
	_ = live
	dead, deadID := group(t)
	orphanLeader, orphanID := group(t)
	// member joins orphanLeader's group and outlives it.
	member := startHelper(t, "sleeper", nil, &syscall.SysProcAttr{Setpgid: true, Pgid: orphanID.PID}, "ready")

	entry := func(unit string, id proc.Identity) Entry {
		return Entry{Unit: unit, Leader: id, PGID: id.PID, Owner: testkit.Identity(t, os.Getpid()), Ownership: "owned"}
	}
	if err := l.Add(ctx, entry("live", liveID), entry("dead", deadID), entry("orphaned", orphanID)); err != nil {
		t.Fatal(err)
	}
	dead.stop()
	orphanLeader.stop()
	if err := l.Add(ctx, selfEntry(t, "trigger")); err != nil {
		t.Fatal(err)
	}
	got, _ := l.Entries(ctx)
	if want := []string{"live", "orphaned", "trigger"}; !reflect.DeepEqual(unitNames(got), want) {
		t.Errorf("after the first prune got %v, want %v", unitNames(got), want)
	}
	member.stop()
	if err := l.Add(ctx, selfEntry(t, "trigger2")); err != nil {
		t.Fatal(err)
	}
	got, _ = l.Entries(ctx)
	if want := []string{"live", "trigger", "trigger2"}; !reflect.DeepEqual(unitNames(got), want) {
		t.Errorf("after the member left got %v, want %v", unitNames(got), want)
	}
}

// TestAlive covers the alive rule case by case, including a recycled group
// id: a live process with pid == pgid whose start time is not the recorded
// leader's.
func TestAlive(t *testing.T) {
	_, id := group(t)
	orphanLeader, orphanID := group(t)
	startHelper(t, "sleeper", nil, &syscall.SysProcAttr{Setpgid: true, Pgid: orphanID.PID}, "ready")
	orphanLeader.stop()
	gone, goneID := group(t)
	gone.stop()
	boot, _ := proc.BootID()
	recycled := id
	recycled.StartTime++
	otherBoot := id
	otherBoot.BootID = "not-" + boot

	for _, tc := range []struct {
		name string
		e    Entry
		want bool
	}{
		{"leader alive", Entry{Leader: id, PGID: id.PID}, true},
		{"leader gone, member alive", Entry{Leader: orphanID, PGID: orphanID.PID}, true},
		{"leader and group gone", Entry{Leader: goneID, PGID: goneID.PID}, false},
		{"recycled group id", Entry{Leader: recycled, PGID: recycled.PID}, false},
		{"other boot", Entry{Leader: otherBoot, PGID: otherBoot.PID}, false},
		{"zero", Entry{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Alive(); got != tc.want {
				t.Errorf("Alive() = %v, want %v", got, tc.want)
			}
			if got := prune([]Entry{tc.e}); (len(got) == 1) != tc.want {
				t.Errorf("prune kept %d, want alive=%v", len(got), tc.want)
			}
		})
	}
}

// countingProbe is a probe that counts the group questions asked of it
// and answers them as liveProbe does.
type countingProbe struct {
	liveProbe
	asked int
}

func (c *countingProbe) groupHasMembers(pgid int) bool {
	c.asked++
	return c.liveProbe.groupHasMembers(pgid)
}

// TestAliveGoneGroupNoTable: an entry whose leader and process group are
// gone (ended and reaped: the removals a clean stop writes) is judged
// dead without asking the probe about its group, which costs a read of
// the whole process table; a group whose leader exited but whose member
// lives is still asked about, and alive.
func TestAliveGoneGroupNoTable(t *testing.T) {
	gone, goneID := group(t)
	gone.stop()
	orphanLeader, orphanID := group(t)
	startHelper(t, "sleeper", nil, &syscall.SysProcAttr{Setpgid: true, Pgid: orphanID.PID}, "ready")
	orphanLeader.stop()

	p := &countingProbe{}
	if (Entry{Leader: goneID, PGID: goneID.PID}).alive(p) {
		t.Error("leader and group gone: alive, want dead")
	}
	if p.asked != 0 {
		t.Errorf("leader and group gone: the probe was asked about the group %d times, want none", p.asked)
	}
	if !(Entry{Leader: orphanID, PGID: orphanID.PID}).alive(p) {
		t.Error("leader gone, member alive: dead, want alive")
	}
	if p.asked != 1 {
		t.Errorf("leader gone, member alive: the probe was asked about the group %d times, want 1", p.asked)
	}
}

func TestAliveCgroup(t *testing.T) {
	mount := proc.CgroupMount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted: the cgroup rule cannot be exercised")
	}
	dir, err := os.MkdirTemp(mount, "ledger-test-")
	if err != nil {
		t.Skipf("cgroup v2 at %s is not writable (%v): the cgroup rule cannot be exercised", mount, err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	_, goneID := func() (*helper, proc.Identity) { h, id := group(t); h.stop(); return h, id }()
	e := Entry{Leader: goneID, PGID: goneID.PID, Cgroup: dir}
	if e.Alive() {
		t.Errorf("empty cgroup: Alive() = true, want false")
	}
	h, _ := group(t)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(h.cmd.Process.Pid)), 0o644); err != nil {
		t.Skipf("cannot move a process into %s (%v): the cgroup rule cannot be exercised", dir, err)
	}
	if !e.Alive() {
		t.Errorf("populated cgroup: Alive() = false, want true")
	}
	h.stop()
	if e.Alive() {
		t.Errorf("cgroup emptied: Alive() = true, want false")
	}
}

func TestParseOwner(t *testing.T) {
	for _, tc := range []struct {
		in      string
		pid     int
		start   uint64
		wantErr bool
	}{
		{"123@456", 123, 456, false},
		{"123", 0, 0, true},
		{"x@1", 0, 0, true},
		{"0@1", 0, 0, true},
		{"1@-1", 0, 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			id, err := ParseOwner(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadOwner) {
					t.Errorf("got %v, want ErrBadOwner", err)
				}
				return
			}
			if err != nil || id.PID != tc.pid || id.StartTime != tc.start {
				t.Errorf("got %+v, %v; want %d@%d", id, err, tc.pid, tc.start)
			}
		})
	}
	id := testkit.Identity(t, os.Getpid())
	back, err := ParseOwner(id.String())
	if err != nil || back != id {
		t.Errorf("round trip of %v: got %v, %v", id, back, err)
	}
}

func TestOpenEmpty(t *testing.T) {
	if _, err := Open(""); err == nil {
		t.Error("Open(\"\") succeeded, want an error")
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
}

// TestPruneSpread: a file of more than pruneEvery entries is pruned by
// one write in len/pruneEvery, not by every write: a start of n units
// made n writes that each read /proc for every entry. A dead entry of a
// 301-entry file is still there after the next write, and gone within the
// writes that spread one pruning over the file.
func TestPruneSpread(t *testing.T) {
	l := openTemp(t)
	ctx := t.Context()
	dead, deadID := group(t)
	batch := []Entry{{Unit: "dead", Leader: deadID, PGID: deadID.PID, Owner: testkit.Identity(t, os.Getpid()), Ownership: "owned"}}
	for i := range 300 {
		batch = append(batch, selfEntry(t, fmt.Sprint("live", i)))
	}
	if err := l.Add(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	dead.stop()
	has := func() bool {
		es, err := l.Entries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(unitNames(es), "dead")
	}
	writes := 0
	for ; has(); writes++ {
		if writes == 1+301/pruneEvery {
			t.Fatalf("the dead entry outlived %d writes of a %d-entry file, want pruned within %d", writes, 301+writes, 1+301/pruneEvery)
		}
		if err := l.Add(ctx, selfEntry(t, fmt.Sprint("trigger", writes))); err != nil {
			t.Fatal(err)
		}
	}
	if writes < 2 {
		t.Errorf("a %d-entry file was pruned by the first write after the death: every write reads /proc for every entry", 301)
	}
}

// TestUpdateSeesWhatItDrops: fn gets the entries as the file has them,
// those of groups gone since included, and the prune looks at what fn
// left: an entry fn moves from a dead group to a live one (a forking
// unit's record rebased onto its daemon once the launcher exited) is
// kept, and a dead entry fn leaves alone is dropped by the same write.
func TestUpdateSeesWhatItDrops(t *testing.T) {
	l := openTemp(t)
	ctx := t.Context()
	moved, movedID := group(t)
	left, leftID := group(t)
	self := testkit.Identity(t, os.Getpid())
	if err := l.Add(ctx,
		Entry{Unit: "moved", Leader: movedID, PGID: movedID.PID, Owner: self, Ownership: "owned"},
		Entry{Unit: "left", Leader: leftID, PGID: leftID.PID, Owner: self, Ownership: "owned"},
	); err != nil {
		t.Fatal(err)
	}
	moved.stop()
	left.stop()
	live := selfEntry(t, "live")
	var given []string
	if err := l.Update(ctx, func(es []Entry) ([]Entry, error) {
		given = unitNames(es)
		for i := range es {
			if es[i].Unit == "moved" {
				es[i].Leader, es[i].PGID = live.Leader, live.PGID
			}
		}
		return es, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(given, []string{"moved", "left"}) {
		t.Errorf("fn was given %v, want the file's entries [moved left]", given)
	}
	es, err := l.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := unitNames(es); !slices.Equal(got, []string{"moved"}) {
		t.Errorf("after the write: %v, want [moved] (moved to a live group, kept; left, dead, dropped)", got)
	}
}
