package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["waitpid"] = cmdWaitPID
	scriptCmds["ledger-add"] = cmdLedgerAdd
}

// cmdWaitPID is the script command `waitpid VAR FILE`: it waits (up to 10
// s) until FILE holds a pid, written by a process the script started in the
// background (`echo $$ > FILE`), and sets $VAR to it. The file is polled:
// the kernel has no event for "a shell wrote a line".
func cmdWaitPID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitpid VAR FILE")
	}
	path := ts.MkAbs(args[1])
	var s string
	if !testkit.Within(10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		s = strings.TrimSpace(string(b))
		return err == nil && strings.HasSuffix(string(b), "\n") && s != ""
	}) {
		ts.Fatalf("waitpid: no pid in %s after 10s", args[1])
	}
	if _, err := strconv.Atoi(s); err != nil {
		ts.Fatalf("waitpid: %s holds %q, not a pid", args[1], s)
	}
	ts.Setenv(args[0], s)
}

// cmdLedgerAdd is the script command `ledger-add STATE UNIT PID OWNER`: it
// records the live process PID, which must lead its own process group, as
// a spawn of UNIT in the ledger of STATE, as hermesd would (identity,
// pgid, argv, log, spawn time). OWNER is "dead" (an owner that no longer
// exists) or "alive" (this test process, a gateway). At the end of the
// script the whole group is killed, so that no member outlives the test.
func cmdLedgerAdd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: ledger-add STATE UNIT PID dead|alive")
	}
	pid, err := strconv.Atoi(args[2])
	ts.Check(err)
	id, err := proc.Read(pid)
	ts.Check(err)
	st, err := proc.ReadStat(pid)
	ts.Check(err)
	if st.PGID != pid {
		ts.Fatalf("ledger-add: pid %d does not lead its group (pgid %d); start it with setsid", pid, st.PGID)
	}
	ts.Defer(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	argv, err := proc.Cmdline(pid)
	ts.Check(err)
	owner := proc.Identity{PID: 1 << 30, StartTime: 7, BootID: id.BootID} // beyond pid_max: never alive
	if args[3] == "alive" {
		owner, err = proc.Self()
		ts.Check(err)
	}
	l, err := ledger.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(l.Add(context.Background(), ledger.Entry{
		Unit:      args[1],
		Leader:    id,
		PGID:      pid,
		Argv:      argv,
		Owner:     owner,
		Role:      "gateway",
		Ownership: "adoptable",
		Reason:    "keeps the model warm",
		Log:       ts.MkAbs(args[0]) + "/logs/" + args[1] + ".log",
		Spawned:   time.Now().Add(-time.Minute),
		Spawn:     ledger.NewSpawnKey(),
	}))
}

func TestMatchEntry(t *testing.T) {
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	const boot, mount = "boot-a", "/sys/fs/cgroup/unified"
	gone := 1 << 30                // beyond pid_max: never a live process
	start := self.StartTime + 1000 // the process asked about started after this test
	st := proc.Stat{PID: 500, PGID: 400, StartTime: start}
	tests := []struct {
		name string
		e    ledger.Entry
		cg   string
		want string
	}{
		{"leader", ledger.Entry{Leader: proc.Identity{PID: 500, StartTime: start, BootID: boot}, PGID: 500}, "", matchLeader},
		{"recycled leader pid", ledger.Entry{Leader: proc.Identity{PID: 500, StartTime: start - 1, BootID: boot}, PGID: 400}, "", ""},
		{"other boot", ledger.Entry{Leader: proc.Identity{PID: 500, StartTime: start, BootID: "boot-b"}, PGID: 500}, "", ""},
		{"group member, leader gone", ledger.Entry{Leader: proc.Identity{PID: gone, StartTime: 100, BootID: boot}, PGID: 400}, "", matchPGID},
		{"group member older than the leader", ledger.Entry{Leader: proc.Identity{PID: gone, StartTime: start + 1, BootID: boot}, PGID: 400}, "", ""},
		{"group id held by a stranger", ledger.Entry{Leader: proc.Identity{PID: self.PID, StartTime: self.StartTime + 1, BootID: boot}, PGID: 400}, "", ""},
		{"group member, leader alive", ledger.Entry{Leader: proc.Identity{PID: self.PID, StartTime: self.StartTime, BootID: boot}, PGID: 400}, "", matchPGID},
		{"other group", ledger.Entry{Leader: proc.Identity{PID: gone, StartTime: 100, BootID: boot}, PGID: 401}, "", ""},
		{"group id 1", ledger.Entry{Leader: proc.Identity{PID: gone, StartTime: 100, BootID: boot}, PGID: 1}, "", ""},
		{"in the cgroup", ledger.Entry{Leader: proc.Identity{PID: gone, BootID: boot}, PGID: 77, Cgroup: mount + "/hermes/web"}, "/hermes/web", matchCgroup},
		{"below the cgroup", ledger.Entry{Leader: proc.Identity{PID: gone, BootID: boot}, PGID: 77, Cgroup: mount + "/hermes/web"}, "/hermes/web/worker", matchCgroup},
		{"a sibling cgroup", ledger.Entry{Leader: proc.Identity{PID: gone, BootID: boot}, PGID: 77, Cgroup: mount + "/hermes/web"}, "/hermes/webx", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchEntry(tt.e, st, tt.cg, mount, boot); got != tt.want {
				t.Errorf("matchEntry = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRunWho calls who's run function without cobra, on processes of the
// test's: this one, which hermes did not start, and a pid that is none.
func TestRunWho(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name     string
		pid      string
		json     bool
		out      string // a regexp of the output
		err      string // a regexp of the error; "": none
		wantCode int
	}{
		{name: "not started by hermes", pid: self, out: `^pid ` + self + ` was not started by hermes units \(no ledger entry in .*\)\nppid: +\d+\n`},
		{name: "-o json", pid: self, json: true, out: `(?s)^\{\n  "pid": ` + self + `,\n  "found": false,.*\n\}\n$`},
		{name: "not a pid", pid: "web", out: `^$`, err: `who: "web" is not a pid; pass a positive process id`, wantCode: exitcode.Usage},
		{name: "no such process", pid: strconv.Itoa(1 << 30), out: `^$`, err: "no such process", wantCode: exitcode.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, out, _ := testClient(t, "", tc.json)
			err := runWho(t.Context(), &whoOptions{clientOptions: o, pid: tc.pid})
			checkRun(t, err, tc.wantCode, tc.err, out.Bytes(), tc.out)
		})
	}
}
