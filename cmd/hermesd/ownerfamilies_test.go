package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
)

// The seeds' families for owners in Python and Node (issue 25, point 4):
// an agent that uses a client library (clients/python, clients/node)
// starts them through hermesd, the keeper, and is killed with kill -9.
// Each family is a row of the survivors matrix (TestGatewaySurvivors), in
// each supervisor mode: hermesd's, and hermesctl run's for the children
// spawned owned.

// clientAgent is one client library's families agent.
type clientAgent struct {
	lang        string // the row's owner: "python", "node"
	interpreter string
	script      string // relative to the repository's root
}

var clientAgents = []clientAgent{
	{"python", "python3", "clients/python/families_agent.py"},
	{"node", "node", "clients/node/families-agent.js"},
}

// agentRow is one family an agent started, as it said in its ready line.
type agentRow struct {
	Family    string `json:"family"`
	Marker    string `json:"marker"`
	Processes int    `json:"processes"`
	Ownership string `json:"ownership"`
}

// agentReason is the reason the agents give their persist_on_release task.
const agentReason = "a background task the test left running on purpose"

// familyGrace is hermesctl run's grace for the agents' children.
const familyGrace = "500ms"

// marked lists the live (not zombie) processes whose command line holds
// marker.
func marked(marker string) []int {
	pids, _ := proc.Find(func(s proc.Stat) bool { return !s.Zombie() })
	var out []int
	for _, pid := range pids {
		if argv, err := proc.Cmdline(pid); err == nil && strings.Contains(strings.Join(argv, " "), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// killMarkedAtEnd kills, at the test's end, what holds marker in its
// command line: no survivor outlives the test. Markers are random digits
// the test made, so only processes it started hold them.
func killMarkedAtEnd(t *testing.T, marker string) {
	t.Cleanup(func() {
		for _, pid := range marked(marker) {
			if pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// buildHermesctl builds hermesctl into a temporary directory.
func buildHermesctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hermesctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../hermesctl").CombinedOutput(); err != nil {
		t.Fatalf("go build hermesctl: %v\n%s", err, out)
	}
	return bin
}

// mcpServer is the entry point of the MCP server .ci/run installs, or ""
// when it is absent.
func mcpServer(root string) string {
	p := filepath.Join(root, ".ci", "npm", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// familyEnv is what an agent needs, beside its own MARKER and FAMILIES.
type familyEnv struct {
	root, hermesctl, socket, runState, mode, mcp, tmp string
}

// startAgent runs a's families agent (every family with families, else a
// plain child only) and returns its process and the rows it started, once
// it said ready. Its stderr goes to a file, named when it fails.
func startAgent(t *testing.T, a clientAgent, e familyEnv, marker string, families bool) (*exec.Cmd, []agentRow) {
	t.Helper()
	killMarkedAtEnd(t, marker)
	cmd := exec.Command(a.interpreter, filepath.Join(e.root, a.script))
	cmd.Env = append(os.Environ(), "HERMES_SOCKET="+e.socket, "HERMESCTL="+e.hermesctl, "HERMES_STATE="+e.runState,
		"CLIENT_DIR="+filepath.Join(e.root, filepath.Dir(a.script)), "MARKER="+marker, "MODE="+e.mode, "GRACE="+familyGrace,
		"MCP_ROOT="+e.tmp, "TMPDIR="+e.tmp)
	if families {
		cmd.Env = append(cmd.Env, "FAMILIES=1", "MCP_SERVER="+e.mcp)
	}
	errPath := filepath.Join(e.tmp, "agent-"+marker+".err")
	errf, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd.Stderr = errf
	out := testkit.StartOutput(t, cmd)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() { l, _ := out.ReadString('\n'); lines <- l; go drain(out) }()
	var line string
	select {
	case line = <-lines:
	case <-time.After(60 * time.Second):
	}
	var rows []agentRow
	if !strings.HasPrefix(line, "ready ") || json.Unmarshal([]byte(line[len("ready "):]), &rows) != nil {
		b, _ := os.ReadFile(errPath)
		t.Fatalf("the %s agent did not get ready (said %q); its stderr:\n%s", a.lang, line, b)
	}
	return cmd, rows
}

func drain(r *bufio.Reader) {
	for {
		if _, err := r.ReadString('\n'); err != nil {
			return
		}
	}
}

// ownerFamilyMatrix runs the families of a Python and a Node owner in each
// supervisor mode, beside a live control owner of the same language and
// mode whose children must be untouched; add adds a row to the matrix.
func ownerFamilyMatrix(t *testing.T, add func(family, owner, expected, found string)) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	hermesctl := buildHermesctl(t)
	mcp := mcpServer(root)
	if mcp == "" {
		t.Logf("the MCP server rows are left out: @modelcontextprotocol/server-filesystem is not in .ci/npm (.ci/run installs it with npm)")
	}
	for _, mode := range supervisorModes {
		t.Run("owners_"+mode, func(t *testing.T) {
			needMode(t, mode)
			dir := t.TempDir()
			writeUnits(t, dir, nil)
			d := startDaemonWith(t, dir, daemonOpts{role: "gateway", mode: mode})
			e := familyEnv{root: root, hermesctl: hermesctl, socket: d.socket, runState: filepath.Join(dir, "run-state"),
				mode: mode, mcp: mcp, tmp: t.TempDir()}
			probe := exec.Command(hermesctl, "--state", e.runState, "run", "--no-owner", "--mode", mode, "--", "true")
			if out, err := probe.CombinedOutput(); err != nil {
				t.Skipf("hermesctl run --mode %s does not run here: %v: %s", mode, err, out)
			}
			for _, a := range clientAgents {
				t.Run(a.lang, func(t *testing.T) {
					if _, err := exec.LookPath(a.interpreter); err != nil {
						t.Skipf("%s is not in PATH: the %s owner's rows need it", a.interpreter, a.lang)
					}
					ownerFamilies(t, d, a, e, func(family, expected, found string) {
						add(a.lang+" owner: "+family+" ("+mode+")", a.lang, expected, found)
					})
				})
			}
		})
	}
}

// ownerFamilies plays one language's rows in one mode: a control agent
// with a plain child, and an agent with every family, killed with kill -9.
// Each owned family must be gone within the deadline (the grace, and the
// machine's noise), the persist_on_release one still running with its
// reason in status, the control agent's children untouched.
func ownerFamilies(t *testing.T, d *hermesd, a clientAgent, e familyEnv, add func(family, expected, found string)) {
	base := fmt.Sprintf("%09d", rand.IntN(1e9))
	ctlMarker, marker := "1"+base[1:], "2"+base[1:]
	_, ctlRows := startAgent(t, a, e, ctlMarker, false)
	agent, rows := startAgent(t, a, e, marker, true)
	if e.mcp != "" && !slices.ContainsFunc(rows, func(r agentRow) bool { return strings.HasPrefix(r.Family, "MCP server") }) {
		t.Errorf("the MCP server is installed (%s) but not among the %s agent's families", e.mcp, a.lang)
	}
	for _, r := range append(rows, ctlRows...) {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s: %d processes running (%v)", r.Family, r.Processes, marked(r.Marker)),
			func() bool { return len(marked(r.Marker)) >= r.Processes })
	}
	ctlBefore := marked(ctlMarker)
	agent.Process.Kill()
	goneAfter := goneTimes(rows, 20*time.Second)
	for _, r := range rows {
		t.Run(strings.ReplaceAll(r.Family, " ", "_"), func(t *testing.T) {
			if r.Ownership == "persist_on_release" {
				add(r.Family, "1 (survives, reason shown)", persistRow(t, d, r))
				return
			}
			found := fmt.Sprintf("0, gone %v after the kill", goneAfter[r.Marker].Round(10*time.Millisecond))
			if _, gone := goneAfter[r.Marker]; !gone {
				left := marked(r.Marker)
				found = fmt.Sprintf("%d (%v)", len(left), left)
				t.Errorf("%s: %d processes of %s's owned family survive its kill -9 by 20s: %v", r.Family, len(left), a.lang, left)
			}
			add(r.Family, "0 (dies)", found)
		})
	}
	ctlAfter := marked(ctlMarker)
	add("control owner's children (not killed)", fmt.Sprintf("%d (alive)", len(ctlBefore)), strconv.Itoa(len(ctlAfter)))
	if !slices.Equal(ctlAfter, ctlBefore) {
		t.Errorf("the live %s control owner's children changed: %v before, %v after: the kill was not confined to one owner", a.lang, ctlBefore, ctlAfter)
	}
}

// goneTimes watches the owned rows from now until each is gone or d
// passes, and returns how long each took (those left running are absent).
func goneTimes(rows []agentRow, d time.Duration) map[string]time.Duration {
	start := time.Now()
	gone := map[string]time.Duration{}
	testkit.Within(d, func() bool {
		all := true
		for _, r := range rows {
			if _, ok := gone[r.Marker]; ok || r.Ownership == "persist_on_release" {
				continue
			}
			if len(marked(r.Marker)) == 0 {
				gone[r.Marker] = time.Since(start)
			} else {
				all = false
			}
		}
		return all
	})
	return gone
}

// persistRow checks the persist_on_release family: all its processes run,
// and status shows its group with its reason, persisting.
func persistRow(t *testing.T, d *hermesd, r agentRow) string {
	found := marked(r.Marker)
	if len(found) != r.Processes {
		t.Errorf("%s: %d of its %d processes run after its owner's kill -9, want all", r.Family, len(found), r.Processes)
	}
	var state, reason string
	ok := testkit.Within(10*time.Second, func() bool {
		for _, g := range d.fullStatus().Owned {
			if g.Name == "task-"+r.Marker {
				state, reason = string(g.State), g.Reason
				return g.Ownership == "persist_on_release" && g.State == "persisting"
			}
		}
		return false
	})
	if !ok || reason != agentReason {
		t.Errorf("%s in status: state %q reason %q, want persisting with reason %q", r.Family, state, reason, agentReason)
	}
	return fmt.Sprintf("%d, %s, reason shown: %v", len(found), state, reason == agentReason)
}
