package units

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
)

// BuiltinDefaults are the unit defaults when hermes.yaml sets none (or
// there is no hermes.yaml): restart on-failure after 1s doubling up to 30s,
// at most 5 starts in 60s, 90s to start, 3s between the stop signal and
// KILL, stop with TERM, logs rotated at 10MiB keeping 3.
func BuiltinDefaults() Defaults {
	return Defaults{
		Restart:    RestartOnFailure,
		RestartSec: time.Second,
		RestartMax: 30 * time.Second,
		StartLimit: StartLimit{Burst: 5, Interval: 60 * time.Second},
		Timeouts:   Timeouts{Start: 90 * time.Second, Stop: 3 * time.Second},
		StopSignal: Signal(syscall.SIGTERM),
		Log:        Log{MaxSize: 10 << 20, Keep: 3},
	}
}

// Argv is the command line to execute: Command, or /bin/sh -c Shell.
func (s *Spec) Argv() []string {
	if s.Shell != "" {
		return []string{"/bin/sh", "-c", s.Shell}
	}
	return slices.Clone(s.Command)
}

// IsJob reports whether the unit runs on a schedule (SPEC §9).
func (s *Spec) IsJob() bool { return s.Schedule != "" }

// cronParser accepts exactly the five standard fields, no descriptors and
// no seconds field, so that what validates here is what the scheduler runs.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// ParseSchedule parses a unit's schedule: a 5-field cron expression,
// optionally after a CRON_TZ= or TZ= time zone prefix.
func ParseSchedule(expr string) (cron.Schedule, error) {
	// robfig/cron takes the zone up to the first space after the prefix and
	// panics (a negative slice bound) when there is none: "TZ=" alone.
	if (strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=")) && !strings.Contains(expr, " ") {
		return nil, fmt.Errorf("time zone prefix %s is not followed by the 5 fields", excerpt(expr))
	}
	return cronParser.Parse(expr)
}

// NameOf is the unit name of a unit file: its base name without .yaml or
// .yml. ok is false for a file that is not a unit file (see IsUnitFile).
func NameOf(path string) (name string, ok bool) {
	base := filepath.Base(path)
	if !IsUnitFile(base) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml"), true
}

// IsUnitFile reports whether a directory entry's base name is a unit file:
// *.yaml or *.yml, not hidden, and not an editor's swap, backup or probe
// file (.name.swp, name~, 4913, .#name). The reconciler filters fsnotify
// events with it.
func IsUnitFile(base string) bool {
	// Swap, backup and probe files end in neither extension.
	return !strings.HasPrefix(base, ".") &&
		((strings.HasSuffix(base, ".yaml") && len(base) > len(".yaml")) ||
			(strings.HasSuffix(base, ".yml") && len(base) > len(".yml")))
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`) })

func validName(s string) bool { return nameRE().MatchString(s) && len(s) <= 200 }

// ValidName reports whether s may name a unit: what a unit file's name,
// less its extension, must be (a letter or digit first, then letters,
// digits and . _ @ -, at most 200 bytes). Files that name units, such as
// hermesd's list of disabled units, hold only such names.
func ValidName(s string) bool { return validName(s) }

// refs records where cross-unit references were written, for the
// directory checks (missing dependencies, cycles, shared ports).
type refs struct {
	deps  map[string]*yaml.Node // "after:x" / "requires:x" -> item node
	ports map[int]*yaml.Node
}

// parseUnit decodes and validates one unit file's content. file is the
// path used in messages and to derive the name; dir is the absolute
// directory relative paths resolve against.
func parseUnit(file, dir string, data []byte, def Defaults, unprivileged bool) (*Spec, refs, Errors) {
	d := &decoder{file: file, dir: dir}
	r := refs{deps: map[string]*yaml.Node{}, ports: map[int]*yaml.Node{}}
	name, ok := NameOf(file)
	if !ok {
		d.errs = append(d.errs, &Error{File: file, Err: ErrFile, Msg: "not a unit file name: want NAME.yaml or NAME.yml"})
		return nil, r, d.errs
	}
	if !validName(name) {
		d.errs = append(d.errs, &Error{File: file, Err: ErrInvalid,
			Msg: fmt.Sprintf("unit name %s (from the file name) must start with a letter or digit and hold only letters, digits and . _ @ -; rename the file", excerpt(name))})
	}
	root := d.parseDocument(data, "unit")
	if root == nil {
		return nil, r, d.errs
	}
	s := &Spec{
		Name: name, File: file, Type: Simple, Ownership: Owned,
		Restart: def.Restart, RestartSec: def.RestartSec, RestartMax: def.RestartMax,
		StartLimit: def.StartLimit, Timeouts: def.Timeouts, StopSignal: def.StopSignal,
		Log:  Log{MaxSize: def.Log.MaxSize, Keep: def.Log.Keep},
		Exec: def.Exec.clone(),
	}
	u := &unitDecode{s: s, r: r, seen: map[string]*field{}}
	for _, f := range unitFields.decode(d, root, "", u) {
		u.seen[f.name] = &f
	}
	d.checkUnit(root, u)
	if unprivileged {
		d.checkPrivilege(root, u, def)
	}
	if len(d.errs) > 0 {
		d.errs.Sort()
		return nil, r, d.errs
	}
	return s, r, nil
}

// unitDecode is one unit file's decoding in progress: the spec being
// filled, its cross-unit references, and the fields seen, by key, for the
// rules that join several keys (checkUnit).
type unitDecode struct {
	s    *Spec
	r    refs
	seen map[string]*field
}

// unitFields are a unit file's keys and their decoders. Rules that join
// several keys are in checkUnit.
var unitFields = slices.Concat(keyed[*unitDecode]{
	{"description", takes(KindText, "What the unit is, for status output."), func(d *decoder, u *unitDecode, f field) { u.s.Description = d.str(f) }},
	{"type", oneOf(types, "simple: up while the program runs in the foreground. oneshot: a step, done when it exits 0 (after: dependents start only then). forking: the program daemonizes and exits 0; the unit is up while the daemon runs (main pid from pid_file, or the one process left).").or(Simple),
		func(d *decoder, u *unitDecode, f field) { u.s.Type = enum(d, f, ParseType, u.s.Type) }},
	{"command", takes(KindArgs, "The program and its arguments, run directly (no shell). Exclusive with shell."), func(d *decoder, u *unitDecode, f field) {
		u.s.Command = d.strings(f)
		if f.val.Kind == yaml.SequenceNode && len(f.val.Content) == 0 || isNull(f.val) {
			d.errf(f.val, "command: must not be empty: write the program and its arguments, like [python3, -m, http.server]")
		} else if len(u.s.Command) > 0 && u.s.Command[0] == "" {
			d.errf(f.val, "command: the program name (first item) must not be empty")
		}
	}},
	{"shell", takes(KindNonEmpty, "A command line run by /bin/sh -c. Exclusive with command."), func(d *decoder, u *unitDecode, f field) { u.s.Shell = d.nonEmpty(f) }},
	{"pid_file", takes(KindNonEmpty, "type: forking only. The file where the daemon writes its main pid; ~ and paths relative to the unit file are expanded. The pid must be in the unit's group. Default: the one process left after the launcher exits."),
		func(d *decoder, u *unitDecode, f field) { u.s.PIDFile = d.path(f) }},
	{"remain_after_exit", takes(KindBool, "type: oneshot only. Once done, the unit counts as active: hermesctl start does not run it again until it is stopped.").or(false),
		func(d *decoder, u *unitDecode, f field) { u.s.RemainAfter = d.bool(f) }},
	{"workdir", takes(KindNonEmpty, "Working directory; ~ and paths relative to the unit file are expanded. Default: the units directory."), func(d *decoder, u *unitDecode, f field) { u.s.Workdir = d.path(f) }},
	{"env", takes(KindEnv, "Extra environment variables; they replace those of env_file."), func(d *decoder, u *unitDecode, f field) { u.s.Env = d.env(f) }},
}, lift(execFields, func(u *unitDecode) *Exec { return &u.s.Exec }), keyed[*unitDecode]{
	{"ownership", oneOf(ownerships, "owned: dies with its owner. adoptable: survives a gateway and is re-adopted. persist_on_release: survives any owner. Non-owned units need a reason.").or(Owned),
		func(d *decoder, u *unitDecode, f field) { u.s.Ownership = enum(d, f, ParseOwnership, u.s.Ownership) }},
	{"reason", takes(KindText, "Why this unit must outlive its owner; required unless ownership is owned."), func(d *decoder, u *unitDecode, f field) { u.s.Reason = d.str(f) }},
	{"restart", oneOf(restarts, "Restart policy. A job (schedule) cannot use always.").or(RestartOnFailure), func(d *decoder, u *unitDecode, f field) { u.s.Restart = enum(d, f, ParseRestart, u.s.Restart) }},
	{"restart_sec", takes(KindDurationOrSeconds, "First restart backoff; doubles up to restart_max_sec. Default 1s."), func(d *decoder, u *unitDecode, f field) { u.s.RestartSec = d.duration(f, anyDelay) }},
	{"restart_max_sec", takes(KindDurationOrSeconds, "Longest restart backoff. Default 30s."), func(d *decoder, u *unitDecode, f field) { u.s.RestartMax = d.duration(f, someDelay) }},
	{"start_limit", block(KindBlock, startLimitFields, ""), func(d *decoder, u *unitDecode, f field) { startLimitFields.decode(d, f.val, f.path, &u.s.StartLimit) }},
	{"after", takes(KindDeps, "Start after these units are ready."), func(d *decoder, u *unitDecode, f field) { u.s.After = d.deps(f, u.s.Name, u.r) }},
	{"requires", takes(KindDeps, "Stop this unit when one of these stops or fails."), func(d *decoder, u *unitDecode, f field) { u.s.Requires = d.deps(f, u.s.Name, u.r) }},
	{"ready", block(KindBlock, readyFields, "When a started unit counts as ready; at most one probe. None: ready once running."), func(d *decoder, u *unitDecode, f field) { u.s.Ready = d.ready(f) }},
	{"timeouts", block(KindBlock, timeoutsFields, ""), func(d *decoder, u *unitDecode, f field) { timeoutsFields.decode(d, f.val, f.path, &u.s.Timeouts) }},
	{"stop_signal", takes(KindSignal, "Signal that asks the unit to stop. Default TERM."), func(d *decoder, u *unitDecode, f field) { u.s.StopSignal = d.signal(f, u.s.StopSignal) }},
	{"reload_signal", takes(KindSignal, "hermesctl reload UNIT sends this signal to the unit's main process (nginx, many daemons: HUP). Exclusive with reload."),
		func(d *decoder, u *unitDecode, f field) { u.s.ReloadSignal = d.signal(f, 0) }},
	{"reload", takes(KindArgs, "hermesctl reload UNIT runs this command (no shell) in the unit's directory, environment and identity, with MAINPID set; the reload succeeds when it exits 0. Exclusive with reload_signal."), func(d *decoder, u *unitDecode, f field) {
		u.s.Reload = d.strings(f)
		if len(u.s.Reload) == 0 && !isNull(f.val) && f.val.Kind == yaml.SequenceNode || len(u.s.Reload) > 0 && u.s.Reload[0] == "" {
			d.errf(f.val, "reload: want the program and its arguments, like [nginx, -s, reload]")
		}
	}},
	{"ports", takes(KindPorts, "TCP ports the unit listens on, checked free before start."), func(d *decoder, u *unitDecode, f field) { u.s.Ports = d.ports(f, u.r) }},
	{"log", block(KindBlock, logFields, ""), func(d *decoder, u *unitDecode, f field) { logFields.decode(d, f.val, f.path, &u.s.Log) }},
	{"schedule", takes(KindSchedule, ""), func(d *decoder, u *unitDecode, f field) { u.s.Schedule = d.schedule(f) }},
	{"run_budget_seconds", takes(KindSeconds, "Jobs: the longest a run may take; a wrap-up notice at 80%, stopped at 100%."), func(d *decoder, u *unitDecode, f field) { u.s.RunBudget = d.duration(f, someRuntime) }},
	{"wrapup_signal", takes(KindSignal, "Jobs: a signal sent at 80% of run_budget_seconds."), func(d *decoder, u *unitDecode, f field) { u.s.WrapupSig = d.signal(f, 0) }},
	{"provider", block(KindBlock, providerFields, ""), func(d *decoder, u *unitDecode, f field) {
		if !isNull(f.val) { // "provider:" with nothing after it: none
			p := d.provider(f, true)
			u.s.Provider = &p
		}
	}},
	{"proxy_env", takes(KindBool, "Give the unit OPENAI_BASE_URL and OPENAI_API_KEY (the proxy token) for hermesd's provider proxy. Jobs always get them.").or(false),
		func(d *decoder, u *unitDecode, f field) { u.s.ProxyEnv = d.bool(f) }},
})

// schedule reads a job's 5-field cron expression and refuses one that
// never fires.
func (d *decoder) schedule(f field) string {
	v := d.nonEmpty(f)
	if v == "" {
		return ""
	}
	if sc, err := ParseSchedule(v); err != nil {
		d.errf(f.val, "schedule: %s is not a 5-field cron expression (minute hour day-of-month month day-of-week, like \"*/15 * * * *\"): %s", excerpt(v), cut(err.Error(), maxParserMsg))
	} else if sc.Next(time.Now()).IsZero() {
		d.errf(f.val, "schedule: %s never fires: no date matches its day-of-month, month and day-of-week (like February 31st); fix those fields", excerpt(v))
	}
	return v
}

// checkUnit holds the rules that join several keys of one unit file, once
// every key is decoded: one of command: and shell:, a reason for a
// survivor, the type's keys, a job's keys, the backoff's bounds.
func (d *decoder) checkUnit(root *yaml.Node, u *unitDecode) {
	s, seen := u.s, u.seen
	cmdF, shellF := seen["command"], seen["shell"]
	switch {
	case cmdF != nil && shellF != nil:
		d.errf(shellF.key, "both command: and shell: are set; keep one (command: is an argv list run directly, shell: a line run by /bin/sh -c)")
	case cmdF == nil && shellF == nil:
		d.errf(root, "no command: or shell: — a unit needs one (command: [prog, arg...] runs it directly, shell: \"...\" runs it by /bin/sh -c)")
	}
	if s.Ownership != Owned && strings.TrimSpace(s.Reason) == "" {
		d.errf(seen["ownership"].val, "ownership: %s needs a non-empty reason: — every survivor has a written reason; add reason: \"why it must outlive its owner\"", s.Ownership)
	}
	d.checkType(s, seen["type"], seen["pid_file"], seen["remain_after_exit"], seen["restart"], seen["ready"])
	d.checkJob(s, seen["restart"], seen["run_budget_seconds"], seen["wrapup_signal"])
	if sigF, cmdF := seen["reload_signal"], seen["reload"]; sigF != nil && cmdF != nil {
		d.errf(cmdF.key, "both reload_signal: and reload: are set; keep one (reload_signal: signals the main process, reload: runs a command beside it)")
	}
	if s.RestartMax > 0 && s.RestartSec > s.RestartMax {
		at := seen["restart_sec"]
		if rmaxF := seen["restart_max_sec"]; rmaxF != nil {
			at = rmaxF
		}
		if at != nil {
			d.errf(at.val, "restart_max_sec (%v) is below restart_sec (%v); the backoff starts at restart_sec and doubles up to restart_max_sec", s.RestartMax, s.RestartSec)
		}
	}
}

// checkPrivilege refuses an identity (user:, group:,
// supplementary_groups:, the unit's or the defaults') under a hermesd that
// is not root: no other process may change its user or groups, so the
// unit could never start.
func (d *decoder) checkPrivilege(root *yaml.Node, u *unitDecode, def Defaults) {
	fix := "run hermesd as root, or remove it (and run hermesd as the user the unit needs)"
	for _, k := range []string{"user", "group", "supplementary_groups"} {
		if f := u.seen[k]; f != nil {
			d.errf(f.key, "%s: needs hermesd to run as root, and it does not; %s", k, fix)
		}
	}
	if def.SetsIdentity() && u.seen["user"] == nil && u.seen["group"] == nil && u.seen["supplementary_groups"] == nil {
		d.errf(root, "hermes.yaml's defaults: set user:, group: or supplementary_groups:, which need hermesd to run as root, and it does not; run hermesd as root, or remove them from defaults:")
	}
}

// checkJob holds the keys of a scheduled job: a job is never restarted on
// success (an unset restart: always from the defaults becomes on-failure),
// and only a job has a run budget and its wrap-up signal.
func (d *decoder) checkJob(s *Spec, restartF, budgetF, wrapF *field) {
	if s.Schedule != "" {
		if s.Restart == RestartAlways {
			if restartF != nil {
				d.errf(restartF.val, "restart: always cannot go with schedule: (a job is not restarted on success); use on-failure or no")
			} else {
				s.Restart = RestartOnFailure
			}
		}
	} else if budgetF != nil {
		d.errf(budgetF.key, "run_budget_seconds: only a job has a run budget; add schedule: or remove it")
	}
	if wrapF != nil && budgetF == nil {
		d.errf(wrapF.key, "wrapup_signal: is sent at 80%% of run_budget_seconds, which is not set; set both, or remove it")
	}
}

// checkType holds the keys that depend on the unit's type: pid_file is a
// forking unit's, remain_after_exit a oneshot's; a oneshot is ready when it
// exits 0 (no probe) and, as in systemd, is never restarted on success (an
// unset restart: always from the defaults becomes on-failure); a job runs
// as a simple unit.
func (d *decoder) checkType(s *Spec, typeF, pidF, remainF, restartF, readyF *field) {
	if pidF != nil && s.Type != Forking {
		d.errf(pidF.key, "pid_file: names the main pid of a daemon that forks; add type: forking, or remove it")
	}
	if remainF != nil && s.Type != Oneshot {
		d.errf(remainF.key, "remain_after_exit: applies to a step that runs to completion; add type: oneshot, or remove it")
	}
	if s.Type == Oneshot {
		if readyF != nil && s.Ready != (Ready{}) {
			d.errf(readyF.key, "ready: a oneshot unit is done when its process exits 0, which is what after: dependents wait for; remove ready: (or use type: simple)")
		}
		if s.Restart == RestartAlways {
			if restartF != nil {
				d.errf(restartF.val, "restart: always cannot go with type: oneshot (a step that succeeded is not run again); use on-failure or no")
			} else {
				s.Restart = RestartOnFailure
			}
		}
	}
	if s.Schedule != "" && s.Type != Simple && typeF != nil {
		d.errf(typeF.val, "type: %s cannot go with schedule: (a job runs until it exits, as type: simple); remove one", s.Type)
	}
}

func (d *decoder) signal(f field, def Signal) Signal {
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		d.errf(f.val, "%s: want a signal like TERM, SIGINT or 15, got %s", f.path, kindName(f.val))
		return def
	}
	sig, err := ParseSignal(f.val.Value)
	if err != nil {
		d.errf(f.val, "%s: %v", f.path, err)
		return def
	}
	return sig
}

// env reads a mapping of variable names to scalar values; numbers and
// booleans are kept as written ("0", "true"), an empty value is "".
func (d *decoder) env(f field) map[string]string {
	n := f.val
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errf(n, "env: want a mapping of NAME: value, got %s", kindName(n))
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		switch {
		case k.Kind != yaml.ScalarNode || k.Value == "" || strings.ContainsAny(k.Value, "=\x00"):
			d.errf(k, "env: %s is not a variable name (no '=', not empty)", kindName(k))
			continue
		case lines[k.Value] != 0:
			d.errf(k, "env: %s is already set at line %d", k.Value, lines[k.Value])
			continue
		case v.Kind != yaml.ScalarNode:
			d.errf(v, "env: %s: want a string value, got %s", k.Value, kindName(v))
			continue
		case strings.ContainsRune(v.Value, 0):
			d.errf(v, "env: %s: a value cannot hold a NUL byte", k.Value)
			continue
		}
		lines[k.Value] = k.Line
		if !isNull(v) {
			out[k.Value] = v.Value
		} else {
			out[k.Value] = ""
		}
	}
	if len(out) == 0 {
		return nil // "env: {}" is no env, as is no key at all
	}
	return out
}

var startLimitFields = keyed[*StartLimit]{
	{"burst", between(1, MaxBurst, "Most starts within interval before the unit is left failed.").or(5), func(d *decoder, sl *StartLimit, f field) { sl.Burst = d.count(f) }},
	{"interval", takes(KindDuration, "Default 60s."), func(d *decoder, sl *StartLimit, f field) { sl.Interval = d.duration(f, someDelay) }},
}

var timeoutsFields = keyed[*Timeouts]{
	{"start", takes(KindDuration, "Longest wait for readiness. Default 90s."), func(d *decoder, t *Timeouts, f field) { t.Start = d.duration(f, someDelay) }},
	{"stop", takes(KindDuration, "Grace between the stop signal and KILL. Default 3s."), func(d *decoder, t *Timeouts, f field) { t.Stop = d.duration(f, anyDelay) }},
	{"runtime_max", takes(KindDuration, "Stop the unit after this long; 0s: never."), func(d *decoder, t *Timeouts, f field) { t.RuntimeMax = d.duration(f, anyRuntime) }},
	{"watchdog", takes(KindDuration, "Restart when no WATCHDOG=1 arrives within this; 0s: off."), func(d *decoder, t *Timeouts, f field) { t.Watchdog = d.duration(f, anyDelay) }},
}

// logFields are a unit's log: keys; hermes.yaml's defaults.log has all
// but the first (path:, a unit's own).
var logFields = keyed[*Log]{
	{"path", takes(KindNonEmpty, "Log file; default <state>/logs/<unit>.log."), func(d *decoder, l *Log, f field) {
		l.Path = d.path(f)
		if msg := checkLogDir(l.Path); l.Path != "" && msg != "" {
			d.errf(f.val, "%s: %s", f.path, msg)
		}
	}},
	{"max_size", takes(KindSize, "Rotate above this size. Default 10MiB."), func(d *decoder, l *Log, f field) { l.MaxSize = d.size(f) }},
	{"keep", between(0, MaxKeep, "Rotated files kept.").or(3), func(d *decoder, l *Log, f field) { l.Keep = d.count(f) }},
}

func (d *decoder) size(f field) Size {
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		d.errf(f.val, "%s: want a size like 10MiB, got %s", f.path, kindName(f.val))
		return 0
	}
	sz, err := ParseSize(f.val.Value)
	if err != nil {
		d.errf(f.val, "%s: %v", f.path, err)
		return 0
	}
	if sz <= 0 {
		d.errf(f.val, "%s: must be more than zero", f.path)
	}
	if sz > MaxLogSize {
		d.errf(f.val, "%s: %s is out of range; allowed: 1B to %s", f.path, f.val.Value, MaxLogSize)
		return 0
	}
	return sz
}

func (d *decoder) deps(f field, self string, r refs) []string {
	var out []string
	if isNull(f.val) {
		return nil
	}
	if f.val.Kind != yaml.SequenceNode {
		d.errf(f.val, "%s: want a list of unit names, like [db], got %s", f.path, kindName(f.val))
		return nil
	}
	for _, it := range f.val.Content {
		it = resolve(it)
		switch {
		case it.Kind != yaml.ScalarNode || isNull(it):
			d.errf(it, "%s: each item must be a unit name, got %s", f.path, kindName(it))
		case !validName(it.Value):
			d.errf(it, "%s: %s is not a unit name (a unit file's name without .yaml)", f.path, excerpt(it.Value))
		case it.Value == self:
			d.errf(it, "%s: a unit cannot depend on itself", f.path)
		case slices.Contains(out, it.Value):
			d.errf(it, "%s: %q is listed twice", f.path, it.Value)
		default:
			out = append(out, it.Value)
			r.deps[f.name+":"+it.Value] = it
		}
	}
	return out
}

func (d *decoder) ports(f field, r refs) []int {
	var out []int
	if isNull(f.val) {
		return nil
	}
	if f.val.Kind != yaml.SequenceNode {
		d.errf(f.val, "ports: want a list of port numbers, like [8080], got %s", kindName(f.val))
		return nil
	}
	for _, it := range f.val.Content {
		it = resolve(it)
		n, err := strconv.Atoi(it.Value)
		switch {
		case it.Kind != yaml.ScalarNode || it.ShortTag() != "!!int" || err != nil:
			d.errf(it, "ports: each item must be a port number, got %s", kindName(it))
		case n < 1 || n > 65535:
			d.errf(it, "ports: %d is not a port (1..65535)", n)
		case r.ports[n] != nil:
			d.errf(it, "ports: %d is listed twice", n)
		default:
			out = append(out, n)
			r.ports[n] = it
		}
	}
	return out
}

var readyFields = keyed[*Ready]{
	{"tcp", takes(KindHostPort, "host:port that accepts a connection."), func(d *decoder, rd *Ready, f field) { rd.TCP = d.hostPort(f) }},
	{"http", takes(KindURL, "URL that answers 2xx."), func(d *decoder, rd *Ready, f field) { rd.HTTP = d.httpURL(f) }},
	{"notify", takes(KindBool, "Ready when the unit sends READY=1 on NOTIFY_SOCKET (sd_notify)."), func(d *decoder, rd *Ready, f field) { rd.Notify = d.bool(f) }},
	{"log", takes(KindNonEmpty, "Regular expression matched against output lines."), func(d *decoder, rd *Ready, f field) {
		rd.Log = d.nonEmpty(f)
		if _, err := regexp.Compile(rd.Log); err != nil {
			d.errf(f.val, "ready.log: %s is not a regular expression: %s", excerpt(rd.Log), cut(err.Error(), maxParserMsg))
		}
	}},
}

// ready decodes the ready: block, and refuses a second probe (notify:
// false is none).
func (d *decoder) ready(f field) Ready {
	var rd Ready
	var first *field
	for _, g := range readyFields.decode(d, f.val, f.path, &rd) {
		if g.name == "notify" && !rd.Notify {
			continue
		}
		if first != nil {
			d.errf(g.key, "ready: %s and %s are both set; a unit has at most one readiness probe", first.path, g.path)
		} else {
			first = &g
		}
	}
	return rd
}

func (d *decoder) hostPort(f field) string {
	s := d.nonEmpty(f)
	if s == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(s)
	n, perr := strconv.Atoi(port)
	if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		d.errf(f.val, "%s: %s is not host:port, like 127.0.0.1:8080 or [::1]:8080", f.path, excerpt(s))
	}
	return s
}

func (d *decoder) httpURL(f field) string {
	s := d.nonEmpty(f)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errf(f.val, "%s: %s is not an http:// or https:// URL with a host", f.path, excerpt(s))
	}
	return s
}
