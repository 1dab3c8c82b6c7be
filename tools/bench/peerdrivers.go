package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/supervisor"
)

// The peers section's drivers: one per manager, each on its trial's
// directory. Each writes its configuration as that manager's user would,
// and speaks to it through its own command-line client.

// peerEnv is the bench's environment for a manager of t (managerEnv),
// with t's tag and extra.
func peerEnv(t *peerTrial, extra ...string) []string {
	return append(append(managerEnv(), t.env), extra...)
}

// managerEnv is the bench's environment without HERMES_* and systemd's
// notification variables: a manager measured is told nothing by them.
func managerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "HERMES_") && k != "NOTIFY_SOCKET" && !strings.HasPrefix(k, "WATCHDOG_") {
			env = append(env, kv)
		}
	}
	return env
}

// runQuiet runs a client command and fails with its output when it fails.
func runQuiet(ctx context.Context, env []string, name string, args ...string) error {
	c := exec.CommandContext(ctx, name, args...)
	c.Env = env
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, b)
	}
	return nil
}

// atomicWrite saves a file as editors do: a temp file renamed onto it.
func atomicWrite(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// childProc is a manager started as the bench's own child.
type childProc struct {
	cmd    *exec.Cmd
	done   chan error // Wait's result, once
	closed bool       // close ran; err is its result
	err    error
}

// childManager is what the drivers of a manager that runs as the bench's
// own child share: the trial, the process and the file of its output. The
// manager stops at SIGTERM. Start sets t (and c nil), then calls start.
type childManager struct {
	t   *peerTrial
	c   *childProc // nil until start succeeded
	out string     // the file of c's output
}

// start starts the manager: name with args and env, its output to the
// file out of the trial's directory.
func (m *childManager) start(env []string, out, name string, args ...string) error {
	m.out = filepath.Join(m.t.dir, out)
	var err error
	m.c, err = startChildProc(env, m.out, name, args...)
	return err
}

func (m *childManager) Owner() (int, error) {
	if m.c == nil {
		return 0, errors.New("the manager is not started")
	}
	return m.c.cmd.Process.Pid, nil
}

// gone is the exit of a manager that exited while it should run (it
// crashed), as its process status says; nil while it runs.
func (m *childManager) gone() error {
	if m.c == nil {
		return nil
	}
	select {
	case err := <-m.c.done:
		m.c.done <- err // close waits for it too
		return fmt.Errorf("exited (%v)", err)
	default:
		return nil
	}
}

func (m *childManager) Stop(context.Context) error { return m.c.cmd.Process.Signal(syscall.SIGTERM) }

func (m *childManager) Close() error { return m.c.close(m.out) }

func startChildProc(env []string, log string, name string, args ...string) (*childProc, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &childProc{cmd: exec.Command(name, args...), done: make(chan error, 1)}
	c.cmd.Env, c.cmd.Stdout, c.cmd.Stderr = env, f, f
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.done <- c.cmd.Wait() }() // joined by close
	return c, nil
}

// close waits up to peerWait for the child to exit, then kills it; an
// exit by a signal other than TERM or KILL, or by a status other than 0,
// is an error.
func (c *childProc) close(log string) error {
	if c == nil {
		return nil
	}
	if !c.closed {
		c.closed, c.err = true, c.wait(log)
	}
	return c.err
}

func (c *childProc) wait(log string) error {
	exited, err := waitExit(c.cmd.Process, c.done, peerWait)
	if !exited {
		return fmt.Errorf("%s did not exit within %v; killed", c.cmd.Path, peerWait)
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil
		}
	}
	if err != nil {
		b, _ := os.ReadFile(log)
		return fmt.Errorf("%s: %w\n%s", c.cmd.Path, err, b)
	}
	return nil
}

// waitExit waits up to limit for p's Wait result on done, and returns it;
// past limit, p is killed and its end waited for, and exited is false.
func waitExit(p *os.Process, done <-chan error, limit time.Duration) (exited bool, err error) {
	select {
	case err = <-done:
		return true, err
	case <-time.After(limit):
		p.Kill()
		<-done
		return false, nil
	}
}

// hermesPeer is hermesd in one containment mode, with hermesctl as its
// client.
type hermesPeer struct {
	childManager
	hermesd, hermesctl string
	mode               supervisor.Mode
	base               bool // the binaries of envBaseHermesd and envBaseHermesctl
}

// envBaseHermesd and envBaseHermesctl name a second hermesd and hermesctl,
// a change's base, measured as peers of their own ("hermesd base") in the
// same run as the tree's, interleaved with them: a before and an after
// that share the machine's load.
const (
	envBaseHermesd   = "HERMES_BENCH_BASE_HERMESD"
	envBaseHermesctl = "HERMES_BENCH_BASE_HERMESCTL"
)

// newHermesPeers are hermesd in cgroup mode where this machine offers it,
// and in pgroup mode; then, when envBaseHermesd is set, the base hermesd
// in the same modes.
func newHermesPeers(ctx context.Context, dir string) ([]*hermesPeer, error) {
	h := &hermesPeer{mode: supervisor.ModePGroup}
	var err error
	if h.hermesd, err = hermesdBinary(ctx, dir); err != nil {
		return nil, err
	}
	if h.hermesctl, err = hermesctlBinary(ctx, dir); err != nil {
		return nil, err
	}
	modes := []supervisor.Mode{supervisor.ModePGroup}
	if o, err := supervisor.New(supervisor.Options{}); err == nil {
		if o.Mode() == supervisor.ModeCgroup {
			modes = []supervisor.Mode{supervisor.ModeCgroup, supervisor.ModePGroup}
		}
		o.Close()
	}
	bins := []hermesPeer{*h}
	if b := os.Getenv(envBaseHermesd); b != "" {
		c := os.Getenv(envBaseHermesctl)
		if c == "" {
			return nil, fmt.Errorf("%s is set, %s is not", envBaseHermesd, envBaseHermesctl)
		}
		bins = append(bins, hermesPeer{hermesd: b, hermesctl: c, base: true})
	}
	var hs []*hermesPeer
	for _, b := range bins {
		for _, m := range modes {
			p := b
			p.mode = m
			hs = append(hs, &p)
		}
	}
	return hs, nil
}

func (h *hermesPeer) Name() string {
	if h.base {
		return fmt.Sprintf("hermesd base (%s)", h.mode)
	}
	return fmt.Sprintf("hermesd (%s)", h.mode)
}

// SupervisorPid finds hermesd's death supervisor (testkit.SupervisorOf).
func (h *hermesPeer) SupervisorPid() (int, error) {
	owner, err := h.Owner()
	if err != nil {
		return 0, err
	}
	if pid := testkit.SupervisorOf(owner); pid != 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("no death supervisor among the children of hermesd %d", owner)
}

func (h *hermesPeer) unit(i, gen int) []byte {
	argv, _ := json.Marshal(h.t.unitArgv(i))
	return fmt.Appendf(nil, "command: %s\nenv: {%s: %q}\n", argv, peerMarkGen, strconv.Itoa(gen))
}

func (h *hermesPeer) Start(_ context.Context, t *peerTrial) error {
	h.t, h.c = t, nil
	units := filepath.Join(t.dir, "units")
	if err := os.Mkdir(units, 0o700); err != nil {
		return err
	}
	for i := range peerUnits {
		if err := os.WriteFile(filepath.Join(units, unitName(i)+".yaml"), h.unit(i, 0), 0o600); err != nil {
			return err
		}
	}
	return h.start(peerEnv(t, "HERMES_SUPERVISOR_MODE="+string(h.mode)), "hermesd.log", h.hermesd, "--units", units,
		"--state", filepath.Join(t.dir, "state"), "--socket", h.socket(), "--config", filepath.Join(t.dir, "hermes.yaml"))
}

func (h *hermesPeer) socket() string { return filepath.Join(h.t.dir, "state", "ctl.sock") }

func (h *hermesPeer) Status(ctx context.Context) error {
	return runQuiet(ctx, peerEnv(h.t, "HERMES_SOCKET="+h.socket()), h.hermesctl, "status")
}

func (h *hermesPeer) Edit(_ context.Context, gen int) error {
	return atomicWrite(filepath.Join(h.t.dir, "units", unitName(0)+".yaml"), h.unit(0, gen))
}

func (h *hermesPeer) Describe() played {
	return played{stop: "SIGTERM to hermesd", status: "`hermesctl status`",
		edit:  "atomic save (temp, rename) of unit 0's file with a new environment; hermesd's watcher applies it",
		owner: "the hermesd process; its death supervisor ends the units"}
}

// supervisordPeer is supervisord (in the foreground, -n), with
// supervisorctl as its client.
type supervisordPeer struct{ childManager }

func newSupervisordPeer() (*supervisordPeer, error) {
	for _, b := range []string{"supervisord", "supervisorctl"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, err
		}
	}
	return &supervisordPeer{}, nil
}

func (s *supervisordPeer) Name() string { return "supervisord" }

func (s *supervisordPeer) conf() string { return filepath.Join(s.t.dir, "supervisord.conf") }

// program is unit i's [program:] section at generation gen; an argument
// with a space is double-quoted (supervisord splits command= as a POSIX
// shell does, without expanding anything).
func (s *supervisordPeer) program(i, gen int) []byte {
	var argv []string
	for _, a := range s.t.unitArgv(i) {
		if strings.ContainsAny(a, " \"") {
			a = strconv.Quote(a)
		}
		argv = append(argv, a)
	}
	return fmt.Appendf(nil, "[program:%s]\ncommand=%s\nenvironment=%s=\"%d\"\nstartsecs=0\nautorestart=true\nstdout_logfile=%s\nredirect_stderr=true\n",
		unitName(i), strings.Join(argv, " "), peerMarkGen, gen, filepath.Join(s.t.dir, "log", unitName(i)+".log"))
}

func (s *supervisordPeer) Start(_ context.Context, t *peerTrial) error {
	s.t, s.c = t, nil
	for _, d := range []string{"conf.d", "log"} {
		if err := os.Mkdir(filepath.Join(t.dir, d), 0o700); err != nil {
			return err
		}
	}
	sock := filepath.Join(t.dir, "supervisor.sock")
	conf := fmt.Sprintf("[unix_http_server]\nfile=%s\n\n[supervisord]\nnodaemon=true\nlogfile=%s\npidfile=%s\nchildlogdir=%s\n\n"+
		"[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n"+
		"[supervisorctl]\nserverurl=unix://%s\n\n[include]\nfiles = %s\n",
		sock, filepath.Join(t.dir, "supervisord.log"), filepath.Join(t.dir, "supervisord.pid"), filepath.Join(t.dir, "log"), sock, filepath.Join(t.dir, "conf.d", "*.conf"))
	if err := os.WriteFile(s.conf(), []byte(conf), 0o600); err != nil {
		return err
	}
	for i := range peerUnits {
		if err := os.WriteFile(filepath.Join(t.dir, "conf.d", unitName(i)+".conf"), s.program(i, 0), 0o600); err != nil {
			return err
		}
	}
	return s.start(peerEnv(t), "supervisord.out", "supervisord", "-n", "-c", s.conf())
}

func (s *supervisordPeer) Status(ctx context.Context) error {
	return runQuiet(ctx, peerEnv(s.t), "supervisorctl", "-c", s.conf(), "status")
}

func (s *supervisordPeer) Edit(ctx context.Context, gen int) error {
	if err := atomicWrite(filepath.Join(s.t.dir, "conf.d", unitName(0)+".conf"), s.program(0, gen)); err != nil {
		return err
	}
	return runQuiet(ctx, peerEnv(s.t), "supervisorctl", "-c", s.conf(), "update")
}

func (s *supervisordPeer) Describe() played {
	return played{stop: "SIGTERM to supervisord", status: "`supervisorctl status`",
		edit:  "atomic save of unit 0's conf.d file with a new environment=, then `supervisorctl update` (supervisord watches no file)",
		owner: "the supervisord process"}
}

// pm2Peer is pm2: its CLI starts the God daemon on first use, in a
// PM2_HOME of the trial's own.
type pm2Peer struct {
	t       *peerTrial
	started chan error // the `pm2 start` command's result, once
	err     error      // what started gave
	god     int        // the daemon's pid, once read
}

func newPM2Peer() (*pm2Peer, error) {
	if _, err := exec.LookPath("pm2"); err != nil {
		return nil, err
	}
	return &pm2Peer{}, nil
}

func (p *pm2Peer) Name() string { return "pm2" }

func (p *pm2Peer) home() string { return filepath.Join(p.t.dir, "pm2") }

func (p *pm2Peer) env() []string { return peerEnv(p.t, "PM2_HOME="+p.home()) }

func (p *pm2Peer) eco() string { return filepath.Join(p.t.dir, "ecosystem.json") }

// ecosystem is the apps file with unit 0 at generation gen.
func (p *pm2Peer) ecosystem(gen int) ([]byte, error) {
	type app struct {
		Name        string            `json:"name"`
		Script      string            `json:"script"`
		Args        []string          `json:"args"`
		Interpreter string            `json:"interpreter"`
		Env         map[string]string `json:"env"`
	}
	var apps []app
	for i := range peerUnits {
		argv := p.t.unitArgv(i)
		apps = append(apps, app{Name: unitName(i), Script: argv[0], Args: argv[1:], Interpreter: "none", Env: map[string]string{peerMarkGen: strconv.Itoa(gen)}})
	}
	return json.Marshal(map[string][]app{"apps": apps})
}

// Start runs `pm2 start` without waiting for it: the clock runs to the
// units; the command's result is read by the next call.
func (p *pm2Peer) Start(ctx context.Context, t *peerTrial) error {
	p.t, p.god, p.err = t, 0, nil
	b, err := p.ecosystem(0)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.eco(), b, 0o600); err != nil {
		return err
	}
	p.started = make(chan error, 1)
	go func() { p.started <- runQuiet(ctx, p.env(), "pm2", "start", p.eco()) }() // joined by wait
	return nil
}

// wait returns `pm2 start`'s result once it is in.
func (p *pm2Peer) wait() error {
	if p.started != nil {
		p.err, p.started = <-p.started, nil
	}
	return p.err
}

func (p *pm2Peer) Owner() (int, error) {
	if err := p.wait(); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(p.home(), "pm2.pid"))
	if err != nil {
		return 0, err
	}
	p.god, err = strconv.Atoi(strings.TrimSpace(string(b)))
	return p.god, err
}

func (p *pm2Peer) Status(ctx context.Context) error {
	if err := p.wait(); err != nil {
		return err
	}
	return runQuiet(ctx, p.env(), "pm2", "ls")
}

func (p *pm2Peer) Edit(ctx context.Context, gen int) error {
	b, err := p.ecosystem(gen)
	if err != nil {
		return err
	}
	if err := atomicWrite(p.eco(), b); err != nil {
		return err
	}
	return runQuiet(ctx, p.env(), "pm2", "restart", p.eco(), "--only", unitName(0), "--update-env")
}

func (p *pm2Peer) Stop(ctx context.Context) error {
	if _, err := p.Owner(); err != nil {
		return err
	}
	return runQuiet(ctx, p.env(), "pm2", "kill")
}

// Close waits for the God daemon to be gone (a zombie counts: it is no
// child of the bench's, and what reaps it is not ours), then kills it.
func (p *pm2Peer) Close() error {
	err := p.wait()
	if p.god == 0 {
		if _, e := p.Owner(); e != nil {
			return errors.Join(err, e)
		}
	}
	deadline := time.Now().Add(peerWait)
	for {
		st, e := proc.ReadStat(p.god)
		if e != nil || st.Zombie() {
			return err
		}
		if time.Now().After(deadline) {
			syscall.Kill(p.god, syscall.SIGKILL)
			return errors.Join(err, fmt.Errorf("pm2's daemon %d still running %v after; killed", p.god, peerWait))
		}
		time.Sleep(10 * time.Millisecond) // no exit event for a process that is not our child
	}
}

func (p *pm2Peer) Describe() played {
	return played{stop: "`pm2 kill` (stops every app, then the daemon)", status: "`pm2 ls`",
		edit:  "atomic save of ecosystem.json with unit 0's env changed, then `pm2 restart ecosystem.json --only u000 --update-env`",
		owner: "pm2's God daemon (its pid file)"}
}
