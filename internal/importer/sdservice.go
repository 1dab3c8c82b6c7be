package importer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hermes-units/hermes/units"
)

// serviceKeys map the [Service] options hermes has.
var serviceKeys = map[string]func(*sdConv, string, string){
	"Type":               (*sdConv).serviceType,
	"ExecStart":          func(c *sdConv, k, v string) { c.start = c.exec(k, v, c.start) },
	"ExecStartPre":       func(c *sdConv, k, v string) { c.pre = c.exec(k, v, c.pre) },
	"ExecStartPost":      func(c *sdConv, k, v string) { c.post = c.exec(k, v, c.post) },
	"ExecReload":         func(c *sdConv, k, v string) { c.reload = c.exec(k, v, c.reload) },
	"WorkingDirectory":   (*sdConv).workdir,
	"Environment":        (*sdConv).environment,
	"Restart":            (*sdConv).restart,
	"RestartSec":         func(c *sdConv, k, v string) { c.restartFirst = c.delay(k, v) },
	"RestartMaxDelaySec": func(c *sdConv, k, v string) { c.restartLongest = c.delay(k, v) },
	"StartLimitInterval": (*sdConv).startLimitInterval,
	"StartLimitBurst":    (*sdConv).startLimitBurst,
	"TimeoutStartSec":    (*sdConv).timeoutStart,
	"TimeoutStopSec":     (*sdConv).timeoutStop,
	"TimeoutSec": func(c *sdConv, k, v string) {
		c.timeoutStart(k, v)
		c.timeoutStop(k, v)
	},
	"RuntimeMaxSec":   (*sdConv).runtimeMax,
	"WatchdogSec":     (*sdConv).watchdog,
	"KillSignal":      (*sdConv).killSignal,
	"PIDFile":         func(c *sdConv, _, v string) { c.f.PIDFile = v },
	"RemainAfterExit": (*sdConv).remainAfterExit,
	"StandardOutput":  func(c *sdConv, k, v string) { c.stdout = c.output(k, v) },
	"StandardError":   func(c *sdConv, k, v string) { c.stderr = c.output(k, v) },
}

func (c *sdConv) serviceType(key, v string) {
	c.f.Ready = nil
	switch v {
	case "simple", "exec", "":
		c.typ = units.Simple
	case "oneshot":
		c.typ = units.Oneshot
	case "forking":
		c.typ = units.Forking
	case "notify", "notify-reload":
		c.typ = units.Simple
		c.f.Ready = &Ready{Notify: true}
		if v == "notify-reload" {
			c.f.ReloadSignal = "HUP" // systemd's ReloadSignal= default; an ExecReload= replaces it
		}
	case "idle":
		c.typ = units.Simple
		c.n.add(key, "idle: mapped to simple; hermes does not wait for other jobs to finish")
	default:
		c.typ = units.Simple
		c.n.add(key, "Type=%s has no hermes equivalent: mapped to simple (up while its program runs)", v)
	}
}

// exec parses one Exec*= line and appends it to list; an empty value
// resets the list.
func (c *sdConv) exec(key, v string, list []execLine) []execLine {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	line := execLine{key: key}
	noVars, argv0 := false, false
	for len(v) > 0 && strings.IndexByte("@-:+!|", v[0]) >= 0 {
		switch v[0] {
		case '-':
			line.ignoreFail = true
		case ':':
			noVars = true
		case '@':
			c.n.add(key, "the @ prefix (a program name other than argv[0]) has no hermes equivalent: the program is run under its own name")
			argv0 = true
		case '+', '!':
			c.n.add(key, "the %c prefix (privileges) is %s", v[0], whyUser)
		case '|':
			c.n.add(key, "the | prefix (a login shell) has no hermes equivalent")
		}
		v = v[1:]
	}
	words, err := SplitWords(v)
	if err != nil || len(words) == 0 {
		c.n.add(key, "does not parse as a command line: %v", err)
		return list
	}
	if argv0 && len(words) > 1 {
		words = append(words[:1], words[2:]...)
	}
	if noVars {
		for i, w := range words {
			words[i] = strings.ReplaceAll(w, "$", "$$")
		}
	}
	line.words = words
	return append(list, line)
}

func (c *sdConv) workdir(key, v string) {
	if p, optional := strings.CutPrefix(v, "-"); optional {
		c.n.add(key, "the - prefix (optional directory) has no hermes equivalent: the directory must exist when the unit starts")
		v = p
	}
	c.f.Workdir = v
}

func (c *sdConv) environment(key, v string) {
	if strings.TrimSpace(v) == "" {
		c.f.Env = nil
		return
	}
	words, err := SplitWords(v)
	if err != nil {
		c.n.add(key, "does not parse: %v", err)
		return
	}
	for _, w := range words {
		name, val, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			c.n.add(key, "%q is not NAME=VALUE", w)
			continue
		}
		if c.f.Env == nil {
			c.f.Env = map[string]string{}
		}
		c.f.Env[name] = val
	}
}

func (c *sdConv) restart(key, v string) {
	c.restartSet = true
	switch v {
	case "no", "always", "on-failure":
		c.f.Restart = v
	case "on-abnormal", "on-abort", "on-watchdog":
		c.f.Restart = string(units.RestartOnFailure)
		c.n.add(key, "%s: mapped to on-failure, which also restarts after an exit status other than 0", v)
	case "on-success":
		c.f.Restart = string(units.RestartAlways)
		c.n.add(key, "on-success: mapped to always, which also restarts after a failure")
	default:
		c.restartSet = false
		c.n.add(key, "%q is not a restart policy", v)
	}
}

// delay reads a backoff time span within hermes's bounds; 0 when it
// cannot be mapped (noted).
func (c *sdConv) delay(key, v string) time.Duration {
	d, inf, err := parseSpan(v)
	switch {
	case err != nil:
		c.n.add(key, "%v", err)
	case inf || d > units.MaxDelay:
		c.n.add(key, "%s is above hermes's longest backoff (%v)", v, maxDelay)
	case d == 0:
		c.n.add(key, "0: hermes's backoff is never zero; its default applies")
	default:
		return d
	}
	return 0
}

func (c *sdConv) timeoutStart(key, v string) {
	c.startTimeout, c.startTimeoutInfin = c.span(key, v, "start timeout", units.MaxDelay)
}

// span reads the time span v of key, which hermes takes up to most (its
// longest what): the span as a unit file writes it, or off when it is
// infinity or 0, which turn the limit off in systemd. A span it cannot
// read, or above most, is noted, and is neither.
func (c *sdConv) span(key, v, what string, most time.Duration) (s string, off bool) {
	d, inf, err := parseSpan(v)
	switch {
	case err != nil:
		c.n.add(key, "%v", err)
	case inf || d == 0:
		return "", true
	case d > most:
		c.n.add(key, "%s is above hermes's longest %s (%v)", v, what, units.FormatDuration(most))
	default:
		return units.FormatDuration(d), false
	}
	return "", false
}

func (c *sdConv) timeoutStop(key, v string) {
	d, inf, err := parseSpan(v)
	switch {
	case err != nil:
		c.n.add(key, "%v", err)
	case inf || d == 0 || d > units.MaxDelay:
		c.n.add(key, "%s: hermes always KILLs after timeouts.stop, at most %v: set to %v", v, maxDelay, maxDelay)
		c.timeouts().Stop = units.FormatDuration(units.MaxDelay)
	default:
		c.timeouts().Stop = units.FormatDuration(d)
	}
}

func (c *sdConv) runtimeMax(key, v string) {
	if s, off := c.span(key, v, "runtime_max", units.MaxRuntime); s != "" || off {
		c.timeouts().RuntimeMax = s
	}
}

func (c *sdConv) watchdog(key, v string) {
	if s, off := c.span(key, v, "watchdog", units.MaxDelay); s != "" || off {
		c.timeouts().Watchdog = s
	}
}

func (c *sdConv) killSignal(key, v string) {
	sig, err := units.ParseSignal(v)
	if err != nil {
		c.n.add(key, "%v", err)
		return
	}
	c.f.StopSignal = sig.String()
}

func (c *sdConv) remainAfterExit(key, v string) {
	switch strings.ToLower(v) {
	case "yes", "true", "on", "1":
		c.f.RemainAfterExit = true
	case "no", "false", "off", "0":
		c.f.RemainAfterExit = false
	default:
		c.n.add(key, "%q is not a boolean", v)
	}
}

// output reads StandardOutput= or StandardError=: the path of a file it
// appends to, or "" (noted) when hermes cannot do what it says.
func (c *sdConv) output(key, v string) string {
	kind, path, _ := strings.Cut(v, ":")
	switch kind {
	case "append":
		return path
	case "file":
		c.n.add(key, "file: writes over the file from its start; hermes appends to it")
		return path
	case "inherit", "":
		return ""
	}
	c.n.add(key, "%s: hermes writes a unit's output to its log file (log.path, default <state>/logs/%s.log)", kind, c.name)
	return ""
}

// finish sets the keys that depend on several options: the type, the
// command, the start timeout, the backoff, the log.
func (c *sdConv) finish() {
	switch c.typ {
	case units.Oneshot, units.Forking:
		c.f.Type = string(c.typ)
	}
	if c.f.PIDFile != "" && c.typ != units.Forking {
		c.n.add("Service.PIDFile", "only a forking service has a pid file")
		c.f.PIDFile = ""
	}
	if c.f.RemainAfterExit && c.typ != units.Oneshot {
		c.n.add("Service.RemainAfterExit", "only a oneshot service remains active after its exit")
		c.f.RemainAfterExit = false
	}
	c.command()
	c.reloadKeys()
	c.finishTimeouts()
	c.finishBackoff()
	c.finishLog()
	if c.f.Timeouts != nil && *c.f.Timeouts == (Timeouts{}) {
		c.f.Timeouts = nil
	}
	if !c.restartSet {
		// systemd's default is Restart=no; hermes's is on-failure.
		c.f.Restart = string(units.RestartNo)
	}
}

func (c *sdConv) finishTimeouts() {
	switch {
	case c.typ == units.Oneshot && c.startTimeout != "":
		// systemd bounds a oneshot's whole run by TimeoutStartSec;
		// hermes by runtime_max.
		if c.timeouts().RuntimeMax == "" {
			c.timeouts().RuntimeMax = c.startTimeout
			c.n.add("Service.TimeoutStartSec", "a oneshot's run is bounded by timeouts.runtime_max in hermes: mapped there")
		}
	case c.typ == units.Oneshot:
	case c.startTimeoutInfin:
		c.timeouts().Start = units.FormatDuration(units.MaxDelay)
		c.n.add("Service.TimeoutStartSec", "infinity: hermes waits at most %v for readiness", maxDelay)
	case c.startTimeout != "":
		c.timeouts().Start = c.startTimeout
	}
}

func (c *sdConv) finishBackoff() {
	switch {
	case c.restartFirst > 0 && c.restartLongest == 0:
		// systemd waits RestartSec every time: a backoff that does not grow.
		c.f.RestartSec = units.FormatDuration(c.restartFirst)
		c.f.RestartMaxSec = c.f.RestartSec
	case c.restartFirst > 0 && c.restartLongest >= c.restartFirst:
		c.f.RestartSec = units.FormatDuration(c.restartFirst)
		c.f.RestartMaxSec = units.FormatDuration(c.restartLongest)
	case c.restartLongest > 0 && c.restartFirst == 0:
		c.f.RestartMaxSec = units.FormatDuration(c.restartLongest)
	case c.restartFirst > 0:
		c.n.add("Service.RestartMaxDelaySec", "below RestartSec: left out")
		c.f.RestartSec = units.FormatDuration(c.restartFirst)
		c.f.RestartMaxSec = c.f.RestartSec
	}
}

func (c *sdConv) finishLog() {
	if c.stderr != "" && c.stderr != c.stdout {
		c.n.add("Service.StandardError", "%s (%s differs from StandardOutput's)", whyNoSeparate, c.stderr)
	}
	if c.stdout != "" {
		c.f.Log = &Log{Path: c.stdout}
	}
}

// command sets command: (one plain line) or shell: (several lines,
// variables, ignored failures).
func (c *sdConv) command() {
	if len(c.start) == 0 {
		c.n.add("Service.ExecStart", "missing: a unit needs a command")
		return
	}
	if len(c.start) > 1 && c.typ != units.Oneshot {
		c.n.add("Service.ExecStart", "only a oneshot service may have several; the first is kept")
		c.start = c.start[:1]
	}
	if len(c.pre) == 0 && len(c.post) == 0 && len(c.start) == 1 && !c.start[0].ignoreFail && !slices.ContainsFunc(c.start[0].words, hasVars) {
		for _, w := range c.start[0].words {
			c.f.Command = append(c.f.Command, literal(w))
		}
		return
	}
	var steps []string
	for _, l := range c.pre {
		steps = append(steps, shellLine(l, false))
	}
	if c.typ == units.Oneshot {
		for _, l := range c.start {
			steps = append(steps, shellLine(l, false))
		}
		for _, l := range c.post {
			steps = append(steps, shellLine(l, false))
		}
	} else {
		if c.start[0].ignoreFail {
			c.n.add("Service.ExecStart", "the - prefix (a failure counts as success) has no hermes equivalent for a service that keeps running")
		}
		steps = append(steps, shellLine(execLine{words: c.start[0].words}, true))
		for _, l := range c.post {
			c.n.add(l.key, "hermes runs no command after a service has started")
		}
	}
	c.f.Shell = strings.Join(steps, " && ")
}

// reloadKeys maps ExecReload=: the usual `kill -HUP $MAINPID` becomes
// reload_signal:, one plain line reload:, and anything else (several
// lines, variables, ignored failures) reload: [/bin/sh, -c, …], which
// hermes runs with MAINPID in its environment as systemd does.
func (c *sdConv) reloadKeys() {
	switch {
	case len(c.reload) == 0:
		return
	case len(c.reload) == 1 && !c.reload[0].ignoreFail:
		if sig, ok := killMain(c.reload[0].words); ok {
			c.f.ReloadSignal = sig
			return
		}
		if !slices.ContainsFunc(c.reload[0].words, hasVars) {
			c.f.ReloadSignal = ""
			for _, w := range c.reload[0].words {
				c.f.Reload = append(c.f.Reload, literal(w))
			}
			return
		}
	}
	steps := make([]string, len(c.reload))
	for i, l := range c.reload {
		steps[i] = shellLine(l, false)
	}
	c.f.ReloadSignal = ""
	c.f.Reload = []string{"/bin/sh", "-c", strings.Join(steps, " && ")}
}

// killMain reads `kill -SIG $MAINPID` (kill or /bin/kill, -SIG, -s SIG
// or --signal SIG, $MAINPID or ${MAINPID}): the signal's name, as
// reload_signal: writes it.
func killMain(words []string) (string, bool) {
	if len(words) < 3 || (words[0] != "kill" && !strings.HasSuffix(words[0], "/kill")) {
		return "", false
	}
	last := words[len(words)-1]
	if last != "$MAINPID" && last != "${MAINPID}" {
		return "", false
	}
	var sig string
	switch opts := words[1 : len(words)-1]; {
	case len(opts) == 1 && strings.HasPrefix(opts[0], "-"):
		sig = opts[0][1:]
	case len(opts) == 2 && (opts[0] == "-s" || opts[0] == "--signal"):
		sig = opts[1]
	default:
		return "", false
	}
	s, err := units.ParseSignal(sig)
	if err != nil {
		return "", false
	}
	return s.String(), true
}

// shellLine writes an Exec line for /bin/sh: "exec" before the main
// command of a long-running service, "|| true" after a "-" line.
func shellLine(l execLine, execIt bool) string {
	words := make([]string, len(l.words))
	for i, w := range l.words {
		words[i] = shellWord(w)
	}
	s := strings.Join(words, " ")
	switch {
	case execIt:
		return "exec " + s
	case l.ignoreFail:
		return fmt.Sprintf("{ %s || true; }", s)
	}
	return s
}

// timer reads the NAME.timer that starts this service: its OnCalendar=
// becomes schedule:.
func (c *sdConv) timer(t sdFile, n *noter) {
	var cals []string
	for _, o := range t.opts {
		key := o.Section + "." + o.Name
		switch {
		case o.Section == "Timer" && o.Name == "OnCalendar":
			if o.Value == "" {
				cals = nil
			} else {
				cals = append(cals, o.Value)
			}
		case o.Section == "Timer" && o.Name == "Unit":
		case o.Section == "Timer" && o.Name == "AccuracySec":
			n.add(key, "a job fires on the minute")
		case o.Section == "Timer" && o.Name == "Persistent":
			n.add(key, "hermes does not run a job's missed runs after a stop")
		case o.Section == "Timer":
			n.add(key, "hermes schedules a job by a 5-field cron expression only")
		case o.Section == "Install":
			n.add(key, "a job's schedule starts once hermesd has read its unit: nothing to enable")
		default:
			n.add(key, "the timer's %s= is not carried over", o.Name)
		}
	}
	if len(cals) == 0 {
		n.add("Timer.OnCalendar", "missing: the timer has no calendar schedule")
		return
	}
	for _, extra := range cals[1:] {
		n.add("Timer.OnCalendar", "%s: a unit has one schedule; only %s is kept", extra, cals[0])
	}
	cron, err := cronSchedule(cals[0])
	if err != nil {
		n.add("Timer.OnCalendar", "%v", err)
		return
	}
	c.f.Schedule = cron
	if c.typ == units.Oneshot {
		c.typ = units.Simple
		c.n.add("Service.Type", "oneshot: a job runs until it exits, as a oneshot does; hermes writes no type: for it")
	}
	if c.f.Restart == string(units.RestartAlways) {
		c.f.Restart = string(units.RestartOnFailure)
		c.n.add("Service.Restart", "always: a job is not restarted on success; mapped to on-failure")
	}
	if c.f.RemainAfterExit {
		c.n.add("Service.RemainAfterExit", "a job is done when its run ends")
		c.f.RemainAfterExit = false
	}
}
