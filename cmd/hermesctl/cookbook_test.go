//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// cookbookDir holds the cookbook's units and the files they run, as
// docs/cookbook.md shows them.
const cookbookDir = "../../examples/cookbook"

// cookbookUnits are the cookbook's units, the programs each needs, and
// what the test asks of it once hermesd says it is ready.
var cookbookUnits = []struct {
	name  string
	needs []string
	root  bool     // runs as another user (user:): hermesd must be root
	with  []string // other units of the cookbook it needs, left out with it
	check func(t *testing.T)
}{
	{name: "nginx", needs: []string{"nginx"}, check: httpSays("http://127.0.0.1:18080/", "hello from nginx")},
	{name: "nginx-forking", needs: []string{"nginx"}, check: httpSays("http://127.0.0.1:18081/", "hello from nginx, daemonized")},
	{name: "redis", needs: []string{"redis-server"}, check: redisPong("127.0.0.1:16380")},
	{name: "web", needs: []string{"python3"}, check: httpSays("http://127.0.0.1:18082/", "")},
	{name: "node-app", needs: []string{"node"}, check: httpSays("http://127.0.0.1:18083/", "hello from node")},
	{name: "model", needs: []string{"python3"}, check: httpSays("http://127.0.0.1:18084/v1/models", `"id": "stand-in"`)},
	{name: "gunicorn", needs: []string{"gunicorn"}, check: httpSays("http://127.0.0.1:18085/", "hello from gunicorn")},
	// pg_ctlcluster is Debian's postgresql-common, which the postgresql
	// package brings with the programs the units run.
	{name: "postgres", needs: []string{"pg_ctlcluster"}, root: true, with: []string{"postgres-init"}, check: pgAnswers("127.0.0.1:15432")},
}

// TestCookbook runs every unit of examples/cookbook as written under a
// real hermesd (a program this machine lacks is named, and its unit left
// out), waits until each is ready, and asks each a question only the
// real server answers: a page, a PONG, a model list.
func TestCookbook(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hermesd, nginx, redis-server, python3 and node")
	}
	work := t.TempDir()
	unitsDir := filepath.Join(work, "units")
	if err := os.CopyFS(unitsDir, os.DirFS(cookbookDir)); err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, u := range cookbookUnits {
		why := ""
		if missing := missingProgram(u.needs); missing != "" {
			why = fmt.Sprintf("%s is not installed here: unit %s left out (.ci/run installs it)", missing, u.name)
		} else if u.root && os.Geteuid() != 0 {
			why = fmt.Sprintf("unit %s runs as another user (user:), which needs a hermesd running as root: left out", u.name)
		}
		if why != "" {
			for _, n := range append([]string{u.name}, u.with...) {
				os.Remove(filepath.Join(unitsDir, n+".yaml"))
			}
			t.Run(u.name, func(t *testing.T) { t.Skip(why) })
			continue
		}
		run = append(run, u.name)
	}
	if len(run) == 0 {
		t.Skip("none of the cookbook's programs is installed")
	}
	rt := filepath.Join(work, "run")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(rt, "hermesd.sock")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "XDG_RUNTIME_DIR=" + rt}
	c := runHermesd(t, daemonPaths{units: unitsDir, state: filepath.Join(work, "state"), socket: socket, log: filepath.Join(work, "hermesd.log"), env: env})
	ready := waitReady(t, c, run)
	for _, u := range cookbookUnits {
		if !containsName(run, u.name) {
			continue
		}
		t.Run(u.name, func(t *testing.T) {
			if !ready[u.name] {
				st, _ := c.Status(t.Context(), u.name)
				log, _ := c.LogPath(t.Context(), u.name)
				b, _ := os.ReadFile(log)
				t.Fatalf("%s is not ready: %+v\nits log:\n%s", u.name, st.Units, b)
			}
			u.check(t)
		})
	}
	if ready["nginx"] {
		t.Run("nginx reload", func(t *testing.T) { nginxReload(t, c, unitsDir, socket) })
	}
}

// nginxReload edits the cookbook nginx's config and runs `hermesctl
// reload nginx` (its reload_signal: HUP): nginx then serves the new
// config, from the same master process, and hermes counts no restart.
func nginxReload(t *testing.T, c *control.Client, unitsDir, socket string) {
	before := unitRow(t, c, "nginx")
	conf := filepath.Join(unitsDir, "nginx.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), `"hello from nginx\n"`, `"hello from nginx, reloaded\n"`, 1)
	if edited == string(b) {
		t.Fatalf("%s has no \"hello from nginx\\n\" to edit", conf)
	}
	if err := os.WriteFile(conf, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "--socket", socket, "reload", "nginx")
	cmd.Args[0] = "hermesctl" // this test binary is hermesctl by that name (TestMain)
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "reloaded nginx\n" {
		t.Fatalf("hermesctl reload nginx: %v: %q", err, out)
	}
	var body string
	for deadline := time.Now().Add(daemonDeadline); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://127.0.0.1:18080/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); strings.Contains(body, "reloaded") {
				break
			}
		}
	}
	if body != "hello from nginx, reloaded\n" {
		t.Fatalf("after the reload nginx answers %q, want the edited config's \"hello from nginx, reloaded\"", body)
	}
	after := unitRow(t, c, "nginx")
	if after.PID != before.PID || after.PID == 0 || after.Restarts != before.Restarts || after.State != control.StateRunning {
		t.Errorf("after the reload: %s pid %d, %d restarts; want running, pid %d (the same master), %d restarts", after.State, after.PID, after.Restarts, before.PID, before.Restarts)
	}
}

// unitRow is the status row of the unit name.
func unitRow(t *testing.T, c *control.Client, name string) control.Unit {
	t.Helper()
	st, err := c.Status(t.Context(), name)
	if err != nil || len(st.Units) != 1 {
		t.Fatalf("status %s: %v %+v", name, err, st.Units)
	}
	return st.Units[0]
}

func containsName(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

func missingProgram(names []string) string {
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", n)); err != nil {
				return n
			}
		}
	}
	return ""
}

// waitReady polls the status until every unit named is ready, or the
// deadline: the units ready by then.
func waitReady(t *testing.T, c *control.Client, names []string) map[string]bool {
	t.Helper()
	ready := map[string]bool{}
	for deadline := time.Now().Add(daemonDeadline); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		st, err := c.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range st.Units {
			ready[u.Name] = u.Ready
		}
		all := true
		for _, n := range names {
			all = all && ready[n]
		}
		if all {
			break
		}
	}
	return ready
}

// httpSays checks that url answers 200 with a body holding want.
func httpSays(url, want string) func(t *testing.T) {
	return func(t *testing.T) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %s %q, want 200 holding %q", url, resp.Status, b, want)
		}
	}
}

// redisPong checks that a redis server at addr answers PING.
func redisPong(addr string) func(t *testing.T) {
	return talk(addr, func(t *testing.T, conn net.Conn) {
		fmt.Fprint(conn, "PING\r\n")
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || line != "+PONG\r\n" {
			t.Errorf("PING: %q, %v; want +PONG", line, err)
		}
	})
}

// pgAnswers checks that a PostgreSQL server at addr answers its protocol:
// to an SSLRequest (length 8, code 80877103) it says S or N, one byte.
func pgAnswers(addr string) func(t *testing.T) {
	return talk(addr, func(t *testing.T, conn net.Conn) {
		if _, err := conn.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := io.ReadFull(conn, b); err != nil || (b[0] != 'S' && b[0] != 'N') {
			t.Errorf("SSLRequest: %q, %v; want S or N", b, err)
		}
	})
}

// talk is a check that connects to addr and runs ask on the connection,
// all within 5 s.
func talk(addr string, ask func(t *testing.T, conn net.Conn)) func(t *testing.T) {
	return func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		ask(t, conn)
	}
}

// TestCookbookMCP runs the cookbook's MCP server on stdio as an agent
// would, an owned child of hermesctl run, and speaks MCP to it:
// initialize, tools/list, tools/call.
func TestCookbookMCP(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the cookbook's MCP server needs it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "run", "--", "python3", "mcp_server.py")
	cmd.Args[0] = "hermesctl" // this test binary is hermesctl by that name (TestMain)
	cmd.Dir = cookbookDir
	cmd.Stderr = os.Stderr
	in, out := testkit.StartPiped(t, cmd)
	call := func(id int, method string, params any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := fmt.Fprintf(in, "%s\n", b); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var reply map[string]any
		if err := json.Unmarshal([]byte(line), &reply); err != nil || reply["result"] == nil {
			t.Fatalf("%s: reply %q: %v", method, line, err)
		}
		return reply["result"].(map[string]any)
	}
	init := call(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "0"}})
	if info, _ := init["serverInfo"].(map[string]any); info["name"] != "cookbook-echo" {
		t.Errorf("initialize: serverInfo %v", init["serverInfo"])
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if tools, _ := call(2, "tools/list", map[string]any{})["tools"].([]any); len(tools) != 1 {
		t.Errorf("tools/list: %v", tools)
	}
	res := call(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	if content, _ := res["content"].([]any); len(content) != 1 || content[0].(map[string]any)["text"] != "hi" {
		t.Errorf("tools/call echo: %v", res)
	}
	in.Close() // the server reads EOF and exits; run exits with its status
	if err := cmd.Wait(); err != nil {
		t.Errorf("hermesctl run: %v", err)
	}
}
