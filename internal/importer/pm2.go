package importer

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-units/hermes/units"
)

// A PM2 ecosystem file: {apps: [{name, script, args, cwd, env, …}]}.
// PM2 restarts an app whenever it exits (autorestart), stops it with
// SIGINT then SIGKILL after kill_timeout (1.6 s), and runs a .js script
// with node; the units written say so.

// pm2Interpreters are the programs PM2 runs a script with, by extension.
var pm2Interpreters = map[string]string{
	".js": "node", ".cjs": "node", ".mjs": "node",
	".py": "python3", ".sh": "bash", ".rb": "ruby", ".pl": "perl", ".php": "php",
	".coffee": "coffee", ".ts": "node",
}

// pm2Gaps are app keys hermes has no equivalent for, and why.
var pm2Gaps = map[string]string{
	"watch":                 "hermes restarts a unit when its unit file changes, not when its code does",
	"ignore_watch":          "hermes restarts a unit when its unit file changes, not when its code does",
	"watch_options":         "hermes restarts a unit when its unit file changes, not when its code does",
	"watch_delay":           "hermes restarts a unit when its unit file changes, not when its code does",
	"max_memory_restart":    whyLimits,
	"env_file":              whyEnvFile,
	"cron_restart":          "hermes has no periodic restart of a running unit; schedule: makes a unit a job that runs to its end",
	"wait_ready":            "hermes does not read process.send('ready'); declare ready: {tcp: host:port} or {http: URL}",
	"shutdown_with_message": "hermes stops a unit with stop_signal, not a message",
	"merge_logs":            "a unit has one log file",
	"combine_logs":          "a unit has one log file",
	"log_date_format":       "hermes adds no time stamps to a unit's lines (hermesctl logs -t shows the time of each line it can date)",
	"time":                  "hermes adds no time stamps to a unit's lines (hermesctl logs -t shows the time of each line it can date)",
	"log_type":              "a unit's log is its program's output as written",
	"pid_file":              "hermes records every unit's pid in its own state",
	"namespace":             "hermes has no namespaces: every unit of the directory is one set",
	"exec_mode":             "hermes runs one process per unit; PM2's cluster mode has no equivalent",
	"source_map_support":    "hermes does not configure node",
	"instance_var":          "hermes runs one process per unit",
	"increment_var":         "hermes runs one process per unit",
	"vizion":                "hermes keeps no version control metadata",
	"treekill":              "hermes always stops the whole group",
	"stop_exit_codes":       "hermes counts only exit 0 as success",
	"filter_env":            "hermes passes its own environment, and env:",
	"force":                 "hermes runs one copy of each unit",
	"appendEnvToName":       "a unit's name is its file's",
}

func pm2File(src Source, res *Result) error {
	doc, err := parseModule(string(src.Data))
	if err != nil {
		how := "write it as JSON"
		if strings.HasSuffix(src.Path, "js") {
			how = fmt.Sprintf("hermesctl import does not run it; if it computes its values, write them out as JSON and import that: node -e 'console.log(JSON.stringify(require(%q), null, 2))' > ecosystem.json", absOrSelf(src.Path))
		}
		return fmt.Errorf("%s: %w: %v; %s", src.Path, ErrSyntax, err, how)
	}
	top := &noter{file: src.Path, list: &res.Notes}
	var apps []any
	switch d := doc.(type) {
	case []any:
		apps = d
	case *jsObject:
		for _, k := range d.keys {
			switch v := d.vals[k]; k {
			case "apps":
				if a, ok := v.([]any); ok {
					apps = a
				} else if o, ok := v.(*jsObject); ok {
					apps = []any{o}
				}
			case "deploy":
				top.add(k, "hermes does not deploy")
			default:
				top.add(k, "has no hermes equivalent")
			}
		}
	}
	if apps == nil {
		return fmt.Errorf("%s: %w: not a PM2 ecosystem file (no apps)", src.Path, ErrFormat)
	}
	for i, a := range apps {
		app, ok := a.(*jsObject)
		if !ok {
			return fmt.Errorf("%s: apps[%d]: %w: not an object", src.Path, i, ErrFormat)
		}
		u, err := pm2App(src.Path, i, app, top)
		if err != nil {
			return err
		}
		res.Units = append(res.Units, u)
	}
	return nil
}

func absOrSelf(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// pm2Conv converts one app.
type pm2Conv struct {
	n      *noter
	path   string // "apps[0]"
	f      File
	script string
	interp string
	iargs  []string
	args   []string
}

func pm2App(file string, i int, app *jsObject, top *noter) (Unit, error) {
	name, _ := app.vals["name"].(string)
	if name == "" {
		s, _ := app.vals["script"].(string)
		name = strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))
	}
	clean, err := cleanName(name)
	if err != nil {
		return Unit{}, fmt.Errorf("%s: apps[%d].name: %w", file, i, err)
	}
	c := &pm2Conv{n: top.forUnit(clean), path: fmt.Sprintf("apps[%d]", i)}
	// PM2's behaviour where the file says nothing: restarted on any exit,
	// stopped with SIGINT, then SIGKILL after 1.6 s.
	c.f.Restart = string(units.RestartAlways)
	c.f.StopSignal = "INT"
	c.f.Timeouts = &Timeouts{Stop: "1600ms"}
	for _, k := range app.keys {
		c.key(k, app.vals[k])
	}
	if err := c.command(); err != nil {
		return Unit{}, fmt.Errorf("%s: %s: %w", file, c.path, err)
	}
	return Unit{Name: clean, Source: file, File: c.f}, nil
}

// key maps one app key.
func (c *pm2Conv) key(k string, v any) {
	key := c.path + "." + k
	switch k {
	case "name":
	case "script":
		c.script = str(v)
	case "args":
		c.args = argList(v)
	case "interpreter", "exec_interpreter":
		c.interp = str(v)
	case "interpreter_args", "node_args":
		c.iargs = append(c.iargs, argList(v)...)
	case "cwd":
		c.f.Workdir = str(v)
	case "user", "uid":
		c.f.User = pm2Principal(c.n, key, v)
	case "gid":
		c.f.Group = pm2Principal(c.n, key, v)
	case "env":
		c.env(key, v)
	case "autorestart":
		if v == false {
			c.f.Restart = string(units.RestartNo)
		}
	case "autostart":
		if v == false {
			c.n.add(key, "false: the unit is written; run hermesctl disable %s to keep it stopped", c.n.unit)
		}
	case "instances":
		if f, ok := v.(float64); !ok || f != 1 {
			c.n.add(key, "%v: a unit runs one process; copy the unit file once per instance, each on its own port", v)
		}
	default:
		c.timing(key, k, v)
	}
}

// timing maps the keys of restarts, timeouts and logs, and notes the rest.
func (c *pm2Conv) timing(key, k string, v any) {
	switch k {
	case "max_restarts":
		n, ok := v.(float64)
		if !ok || n < 1 || n > units.MaxBurst {
			c.n.add(key, "%v is not a count hermes takes (1 to %d)", v, units.MaxBurst)
			return
		}
		c.f.StartLimit = &StartLimit{Burst: int(n)}
		c.n.add(key, "mapped to start_limit.burst: %d starts within start_limit.interval (default 60s); PM2 counts restarts that came sooner than min_uptime", int(n))
	case "min_uptime":
		c.n.add(key, "hermes counts every start within start_limit.interval, however long the run")
	case "restart_delay":
		if d, ok := c.millis(key, v); ok {
			// PM2 waits the same time before each restart.
			c.f.RestartSec = units.FormatDuration(d)
			c.f.RestartMaxSec = c.f.RestartSec
		}
	case "exp_backoff_restart_delay":
		if d, ok := c.millis(key, v); ok {
			c.f.RestartSec = units.FormatDuration(d)
			c.f.RestartMaxSec = units.FormatDuration(max(d, 15*time.Second))
			c.n.add(key, "hermes doubles the delay up to restart_max_sec (PM2 grows it by half, up to 15s)")
		}
	case "kill_timeout":
		if d, ok := c.millis(key, v); ok {
			c.f.Timeouts.Stop = units.FormatDuration(d)
		}
	case "listen_timeout":
		if d, ok := c.millis(key, v); ok {
			c.f.Timeouts.Start = units.FormatDuration(d)
			c.n.add(key, "mapped to timeouts.start, which bounds the wait for a ready: probe")
		}
	case "out_file", "error_file", "log_file", "output", "error", "log":
		c.logFile(key, k, str(v))
	default:
		if why, ok := pm2Gaps[k]; ok {
			c.n.add(key, why)
		} else if strings.HasPrefix(k, "env_") {
			c.n.add(key, "PM2 picks it with --env %s; merge the variables you want into env:", strings.TrimPrefix(k, "env_"))
		} else {
			c.n.add(key, "has no hermes equivalent")
		}
	}
}

// millis reads a PM2 time in milliseconds within hermes's bounds.
func (c *pm2Conv) millis(key string, v any) (time.Duration, bool) {
	f, ok := v.(float64)
	d := time.Duration(f) * time.Millisecond
	if !ok || f <= 0 || d > units.MaxDelay {
		c.n.add(key, "%v is not a time in milliseconds hermes takes (up to %v)", v, maxDelay)
		return 0, false
	}
	return d, true
}

func (c *pm2Conv) env(key string, v any) {
	o, ok := v.(*jsObject)
	if !ok {
		c.n.add(key, "is not an object")
		return
	}
	for _, k := range o.keys {
		val, ok := scalarText(o.vals[k])
		if !ok {
			c.n.add(key+"."+k, "is not a string, number or boolean")
			continue
		}
		if c.f.Env == nil {
			c.f.Env = map[string]string{}
		}
		c.f.Env[k] = val
	}
}

// logFile maps PM2's log files: one file for both streams is log.path.
func (c *pm2Conv) logFile(key, k, path string) {
	switch {
	case path == "" || path == "/dev/null" || path == "NULL":
		c.n.add(key, "%q: hermes always keeps a unit's log", path)
	case c.f.Log == nil:
		c.f.Log = &Log{Path: path}
		if k == "out_file" || k == "output" || k == "error_file" || k == "error" {
			c.n.add(key, "%s: stdout and stderr both go there", whyNoSeparate)
		}
	case c.f.Log.Path != path:
		c.n.add(key, "%s; log.path is %s", whyNoSeparate, c.f.Log.Path)
	}
}

// command builds command: from script, interpreter and args.
func (c *pm2Conv) command() error {
	if c.script == "" {
		return fmt.Errorf("%w: no script", ErrFormat)
	}
	interp := c.interp
	if interp == "" {
		interp = pm2Interpreters[strings.ToLower(filepath.Ext(c.script))]
	}
	var argv []string
	if interp == "" || interp == "none" {
		// A program: PM2 runs a script without a known extension
		// directly ("npm" with args "start").
		argv = append(argv, c.script)
		if len(c.iargs) > 0 {
			c.n.add(c.path+".interpreter_args", "no interpreter runs the script: left out")
		}
	} else {
		argv = append(append(append(argv, interp), c.iargs...), c.script)
	}
	c.f.Command = append(c.f.Command, append(argv, c.args...)...)
	return nil
}

func str(v any) string {
	s, _ := scalarText(v)
	return s
}

// scalarText is a string, number or boolean as text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// argList reads args: an array, or a string split as a shell would
// (quotes group, no expansion).
func argList(v any) []string {
	switch x := v.(type) {
	case []any:
		var out []string
		for _, a := range x {
			out = append(out, str(a))
		}
		return out
	case string:
		words, err := SplitWords(x)
		if err != nil {
			return strings.Fields(x)
		}
		return words
	}
	if s, ok := scalarText(v); ok {
		return []string{s}
	}
	return nil
}

// pm2Principal is a user or group of an app (a name, or a number as JSON
// gives it); anything else is left out, said.
func pm2Principal(n *noter, key string, v any) string {
	switch x := v.(type) {
	case string:
		if x != "" && !strings.ContainsAny(x, ": \t/") {
			return x
		}
	case float64:
		if x >= 0 && x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
	}
	n.add(key, "%v is not a user or group name or number; left out", v)
	return ""
}
