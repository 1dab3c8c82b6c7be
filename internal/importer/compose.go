package importer

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hermes-units/hermes/units"
	"go.yaml.in/yaml/v3"
)

// A process-compose.yaml: processes by name, each with its command,
// availability (restart policy), depends_on with conditions, probes and
// shutdown. Keys are read from the YAML nodes, so that every key of the
// file is either mapped or noted.

// pcProc is one process being converted.
type pcProc struct {
	name  string
	n     *noter
	f     File
	deps  []pcDep
	probe bool // a readiness probe or ready_log_line was mapped
}

type pcDep struct {
	name, condition string
}

// composeFile converts one process-compose file into res.
func composeFile(src Source, res *Result) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(src.Data, &doc); err != nil {
		return fmt.Errorf("%s: %w: %v", src.Path, ErrSyntax, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("%s: %w: not a process-compose file (no processes:)", src.Path, ErrFormat)
	}
	top := &noter{file: src.Path, list: &res.Notes}
	var global map[string]string
	var procs *yaml.Node
	for _, kv := range pairs(doc.Content[0]) {
		switch kv.key {
		case "version":
		case "processes":
			procs = kv.val
		case "environment":
			global = composeEnv(top, "environment", kv.val)
		case "log_location", "log_level", "log_length", "log_configuration", "log_format":
			top.add(kv.key, "hermes keeps one log file per unit (log.path), none for the whole set")
		case "shell":
			top.add(kv.key, "hermes runs shell: by /bin/sh -c; a command that needs another shell can be command: [bash, -c, ...]")
		case "is_strict":
		default:
			top.add(kv.key, "has no hermes equivalent")
		}
	}
	if procs == nil || procs.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: %w: not a process-compose file (no processes:)", src.Path, ErrFormat)
	}
	var list []*pcProc
	for _, kv := range pairs(procs) {
		name, err := cleanName(kv.key)
		if err != nil {
			return fmt.Errorf("%s: processes.%s: %w", src.Path, kv.key, err)
		}
		p := &pcProc{name: name, n: top.forUnit(name)}
		p.f.Restart = string(units.RestartNo) // process-compose's default
		for k, v := range global {
			if p.f.Env == nil {
				p.f.Env = map[string]string{}
			}
			p.f.Env[k] = v
		}
		p.read("processes."+kv.key, kv.val)
		list = append(list, p)
	}
	composeDeps(list)
	for _, p := range list {
		res.Units = append(res.Units, Unit{Name: p.name, Source: src.Path, File: p.f})
	}
	return nil
}

// kv is one key of a mapping and its value.
type kv struct {
	key string
	val *yaml.Node
}

// pairs are n's keys in order; nil when n is not a mapping.
func pairs(n *yaml.Node) []kv {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []kv
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, kv{n.Content[i].Value, n.Content[i+1]})
	}
	return out
}

// procKeys map a process's keys.
var procKeys = map[string]func(p *pcProc, key string, v *yaml.Node){
	"command":         (*pcProc).command,
	"entrypoint":      (*pcProc).entrypoint,
	"description":     func(p *pcProc, _ string, v *yaml.Node) { p.f.Description = v.Value },
	"working_dir":     func(p *pcProc, _ string, v *yaml.Node) { p.f.Workdir = v.Value },
	"environment":     (*pcProc).environment,
	"availability":    (*pcProc).availability,
	"depends_on":      (*pcProc).dependsOn,
	"readiness_probe": (*pcProc).readiness,
	"ready_log_line":  (*pcProc).readyLog,
	"shutdown":        (*pcProc).shutdown,
	"is_daemon":       (*pcProc).daemon,
	"log_location":    func(p *pcProc, _ string, v *yaml.Node) { p.f.Log = &Log{Path: v.Value} },
	"replicas":        (*pcProc).replicas,
	"disabled":        (*pcProc).disabled,
}

// procGaps are a process's keys hermes has no equivalent for, and why.
var procGaps = map[string]string{
	"liveness_probe":         "hermes has no liveness probe; a program that sends WATCHDOG=1 (sd_notify) can use timeouts.watchdog",
	"namespace":              "hermes has no namespaces: every unit of the directory is one set",
	"is_tty":                 "a unit's output goes to its log file, never a terminal",
	"is_foreground":          "hermesctl run runs a command in the foreground, not a unit",
	"is_elevated":            whyUser,
	"vars":                   "hermes does not template commands; write the values in",
	"log_configuration":      "hermes rotates a unit's log by log.max_size and log.keep",
	"disable_ansi_colors":    "hermes writes a unit's output as it comes",
	"launch_timeout_seconds": "hermes bounds a start by timeouts.start, once the program runs",
	"env_cmds":               "hermes runs no command to compute the environment",
	"disable_env_expansion":  "hermes does not expand variables in unit files",
}

// read converts one process's keys.
func (p *pcProc) read(path string, n *yaml.Node) {
	for _, kv := range pairs(n) {
		key := path + "." + kv.key
		if h := procKeys[kv.key]; h != nil {
			h(p, key, kv.val)
		} else if why, ok := procGaps[kv.key]; ok {
			p.n.add(key, why)
		} else {
			p.n.add(key, "has no hermes equivalent")
		}
	}
	if p.f.Shell == "" && len(p.f.Command) == 0 {
		p.n.add(path+".command", "missing: a unit needs a command")
	}
}

// bashisms are constructs of bash that /bin/sh (dash) does not read;
// compiled on first use, not at the start of every hermesctl command.
var bashisms = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\[\[|<\(|\bsource\s|\bfunction\s|\$'|\{[^}\s]*,[^}\s]*\}`)
})

func (p *pcProc) command(key string, v *yaml.Node) {
	if len(p.f.Command) > 0 {
		p.n.add(key, "entrypoint: is set too; kept entrypoint:")
		return
	}
	p.f.Shell = v.Value
	if strings.Contains(v.Value, "{{") {
		p.n.add(key, "holds a {{ }} template: hermes does not template commands; write the value in")
	}
	if bashisms().MatchString(v.Value) {
		p.n.add(key, "looks like bash; hermes runs shell: by /bin/sh -c: use command: [bash, -c, ...] if it needs bash")
	}
}

func (p *pcProc) entrypoint(key string, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.n.add(key, "is not a list")
		return
	}
	if p.f.Shell != "" {
		p.n.add(key, "command: is set too; entrypoint: is kept")
		p.f.Shell = ""
	}
	for _, a := range v.Content {
		p.f.Command = append(p.f.Command, a.Value)
	}
}

func (p *pcProc) environment(key string, v *yaml.Node) {
	for k, val := range composeEnv(p.n, key, v) {
		if p.f.Env == nil {
			p.f.Env = map[string]string{}
		}
		p.f.Env[k] = val
	}
}

// composeEnv reads an environment: list of "NAME=VALUE" (or a mapping).
func composeEnv(n *noter, key string, v *yaml.Node) map[string]string {
	out := map[string]string{}
	switch v.Kind {
	case yaml.SequenceNode:
		for _, item := range v.Content {
			name, val, ok := strings.Cut(item.Value, "=")
			if !ok || name == "" {
				n.add(key, "%q is not NAME=VALUE", item.Value)
				continue
			}
			out[name] = val
		}
	case yaml.MappingNode:
		for _, kv := range pairs(v) {
			out[kv.key] = kv.val.Value
		}
	default:
		n.add(key, "is not a list of NAME=VALUE")
	}
	return out
}

func (p *pcProc) availability(path string, v *yaml.Node) {
	for _, kv := range pairs(v) {
		key := path + "." + kv.key
		switch kv.key {
		case "restart":
			p.restart(key, kv.val.Value)
		case "backoff_seconds":
			secs, err := strconv.Atoi(kv.val.Value)
			if err != nil || secs < 1 || secs > int(units.MaxDelay.Seconds()) {
				p.n.add(key, "%q is not a backoff hermes takes (1 to %d seconds)", kv.val.Value, int(units.MaxDelay.Seconds()))
				continue
			}
			// process-compose waits the same time before every restart.
			p.f.RestartSec = strconv.Itoa(secs) + "s"
			p.f.RestartMaxSec = p.f.RestartSec
		case "max_restarts":
			p.maxRestarts(key, kv.val.Value)
		case "exit_on_end", "exit_on_skipped":
			p.n.add(key, "hermesd keeps running when one unit ends")
		default:
			p.n.add(key, "has no hermes equivalent")
		}
	}
}

func (p *pcProc) restart(key, v string) {
	switch v {
	case "always", "no":
		p.f.Restart = v
	case "on_failure":
		p.f.Restart = string(units.RestartOnFailure)
	case "exit_on_failure":
		p.f.Restart = string(units.RestartNo)
		p.n.add(key, "exit_on_failure: hermesd does not stop the other units when one fails; mapped to restart: no")
	default:
		p.n.add(key, "%q is not a restart policy", v)
	}
}

func (p *pcProc) maxRestarts(key, v string) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= units.MaxBurst {
		p.n.add(key, "%q is not a count hermes takes (0 to %d)", v, units.MaxBurst-1)
		return
	}
	p.f.StartLimit = &StartLimit{Burst: n + 1, Interval: units.FormatDuration(units.MaxDelay)}
	p.n.add(key, "mapped to start_limit: %d starts within %s (hermes counts starts within a window, not restarts ever)", n+1, maxDelay)
}

func (p *pcProc) dependsOn(path string, v *yaml.Node) {
	for _, kv := range pairs(v) {
		cond := "process_started"
		for _, c := range pairs(kv.val) {
			if c.key == "condition" {
				cond = c.val.Value
			} else {
				p.n.add(path+"."+kv.key+"."+c.key, "has no hermes equivalent")
			}
		}
		p.deps = append(p.deps, pcDep{name: kv.key, condition: cond})
	}
}

func (p *pcProc) readiness(path string, v *yaml.Node) {
	for _, kv := range pairs(v) {
		key := path + "." + kv.key
		switch kv.key {
		case "http_get":
			u, err := probeURL(kv.val)
			if err != nil {
				p.n.add(key, "%v", err)
				continue
			}
			p.f.Ready = &Ready{HTTP: u}
			p.probe = true
		case "exec":
			p.n.add(key, "hermes probes readiness by tcp, http, notify or a log line, not by a command")
		default:
			p.n.add(key, "hermes probes until timeouts.start (default 90s) at its own pace")
		}
	}
}

// probeURL is the URL of an http_get probe.
func probeURL(n *yaml.Node) (string, error) {
	u := url.URL{Scheme: "http", Host: "127.0.0.1", Path: "/"}
	port := ""
	for _, kv := range pairs(n) {
		switch kv.key {
		case "scheme":
			u.Scheme = kv.val.Value
		case "host":
			u.Host = kv.val.Value
		case "path":
			u.Path = kv.val.Value
		case "port":
			port = kv.val.Value
		}
	}
	if port == "" {
		return "", fmt.Errorf("no port")
	}
	u.Host = net.JoinHostPort(u.Host, port)
	return u.String(), nil
}

func (p *pcProc) readyLog(key string, v *yaml.Node) {
	if p.f.Ready != nil {
		p.n.add(key, "a unit has one readiness probe; readiness_probe is kept")
		return
	}
	// process-compose looks for the text in a line; ready.log is a
	// regular expression.
	p.f.Ready = &Ready{Log: regexp.QuoteMeta(v.Value)}
	p.probe = true
}

func (p *pcProc) shutdown(path string, v *yaml.Node) {
	for _, kv := range pairs(v) {
		key := path + "." + kv.key
		switch kv.key {
		case "signal":
			sig, err := units.ParseSignal(kv.val.Value)
			if err != nil {
				p.n.add(key, "%v", err)
				continue
			}
			p.f.StopSignal = sig.String()
		case "timeout_seconds":
			secs, err := strconv.Atoi(kv.val.Value)
			if err != nil || secs < 0 || secs > int(units.MaxDelay.Seconds()) {
				p.n.add(key, "%q is not a grace hermes takes", kv.val.Value)
				continue
			}
			p.f.Timeouts = &Timeouts{Stop: strconv.Itoa(secs) + "s"}
		case "command":
			p.n.add(key, "hermes stops a unit with stop_signal, then KILL after timeouts.stop; it runs no stop command")
		case "parent_only":
			p.n.add(key, "hermes always signals the whole group")
		default:
			p.n.add(key, "has no hermes equivalent")
		}
	}
}

func (p *pcProc) daemon(key string, v *yaml.Node) {
	if v.Value == "true" {
		p.f.Type = string(units.Forking)
	}
}

func (p *pcProc) replicas(key string, v *yaml.Node) {
	if v.Value != "1" {
		p.n.add(key, "%s: a unit runs one copy; copy the unit file once per replica", v.Value)
	}
}

func (p *pcProc) disabled(key string, v *yaml.Node) {
	if v.Value == "true" {
		p.n.add(key, "the unit is written; run hermesctl disable %s to keep it stopped", p.name)
	}
}

// composeDeps maps depends_on once every process is read: a dependency
// on completion makes the other process a oneshot.
func composeDeps(list []*pcProc) {
	byName := map[string]*pcProc{}
	for _, p := range list {
		byName[p.name] = p
	}
	for _, p := range list {
		for _, d := range p.deps {
			key := "processes." + p.name + ".depends_on." + d.name
			dep := byName[d.name]
			if dep == nil {
				p.n.add(key, "no process %s in the file", d.name)
				continue
			}
			if !slices.Contains(p.f.After, dep.name) {
				p.f.After = append(p.f.After, dep.name)
			}
			switch d.condition {
			case "process_started":
				if dep.probe {
					p.n.add(key, "process_started: after: waits for %s to be ready (its probe), not only started", dep.name)
				}
			case "process_healthy", "process_log_ready":
				if !dep.probe {
					p.n.add(key, "%s: %s has no readiness probe hermes took: after: waits for it to run", d.condition, dep.name)
				}
			case "process_completed_successfully", "process_completed":
				dep.oneshot(p, key, d.condition)
			default:
				p.n.add(key, "condition %q: mapped to after:", d.condition)
			}
		}
	}
}

// oneshot makes p a step that others wait to complete.
func (p *pcProc) oneshot(from *pcProc, key, cond string) {
	if cond == "process_completed" {
		from.n.add(key, "process_completed: hermes waits for %s to exit 0; a failure holds this unit", p.name)
	}
	if p.f.Type == string(units.Oneshot) {
		return
	}
	if p.f.Type != "" {
		from.n.add(key, "%s is %s; after: waits for it to be ready, not done", p.name, p.f.Type)
		return
	}
	p.f.Type = string(units.Oneshot)
	p.f.Ready = nil
	if p.f.Restart == string(units.RestartAlways) {
		p.f.Restart = string(units.RestartOnFailure)
		p.n.add("processes."+p.name+".availability.restart", "always: %s is a step others wait to complete (type: oneshot), which is not restarted on success: on-failure", p.name)
	}
}
