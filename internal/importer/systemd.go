package importer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/hermes-units/hermes/units"
)

// sdFile is one parsed systemd unit file.
type sdFile struct {
	path string
	name string // the unit's name without its suffix
	opts []*unit.UnitOption
}

// importSystemd converts NAME.service files, each with its NAME.timer
// when one is given (or a timer whose Unit= names it).
func importSystemd(srcs []Source) (*Result, error) {
	res := &Result{}
	var services []sdFile
	timers := map[string]sdFile{} // by the service they start
	for _, src := range srcs {
		base := filepath.Base(src.Path)
		ext := filepath.Ext(base)
		name := strings.TrimSuffix(base, ext)
		if ext != ".service" && ext != ".timer" {
			return nil, fmt.Errorf("%s: %w: a systemd unit file to import is NAME.service or NAME.timer", src.Path, ErrFormat)
		}
		if strings.HasSuffix(name, "@") {
			return nil, fmt.Errorf("%s: %w: %s is a template; write an instance of it (%s) and import that", src.Path, ErrName, base, strings.TrimSuffix(name, "@")+"@NAME"+ext)
		}
		clean, err := cleanName(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		opts, err := unit.DeserializeOptions(bytes.NewReader(src.Data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", src.Path, ErrSyntax, err)
		}
		f := sdFile{path: src.Path, name: clean, opts: opts}
		if ext == ".service" {
			services = append(services, f)
			continue
		}
		target := clean
		for _, o := range opts {
			if o.Section == "Timer" && o.Name == "Unit" {
				target = strings.TrimSuffix(o.Value, ".service")
			}
		}
		timers[target] = f
	}
	for _, s := range services {
		n := &noter{file: s.path, unit: s.name, list: &res.Notes}
		c := &sdConv{name: s.name, n: n}
		c.convert(s.opts)
		if t, ok := timers[s.name]; ok {
			c.timer(t, &noter{file: t.path, unit: s.name, list: &res.Notes})
			delete(timers, s.name)
		}
		c.finish()
		res.Units = append(res.Units, Unit{Name: s.name, Source: s.path, File: c.f})
	}
	for _, name := range slices.Sorted(mapsKeys(timers)) {
		t := timers[name]
		(&noter{file: t.path, list: &res.Notes}).add("Timer.Unit", "starts %s.service, which was not imported; import both files together", name)
	}
	return res, nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// execLine is one Exec*= command line.
type execLine struct {
	key        string
	words      []string // as written ("$$" for a literal dollar)
	ignoreFail bool     // the "-" prefix
}

// sdConv converts one service.
type sdConv struct {
	name string
	n    *noter
	f    File

	typ               units.Type
	pre, start, post  []execLine
	reload            []execLine // ExecReload=
	stdout, stderr    string     // the log paths of StandardOutput= and StandardError=
	restartSet        bool
	restartFirst      time.Duration
	restartLongest    time.Duration
	startTimeout      string // TimeoutStartSec, kept until the type is known
	startTimeoutInfin bool
}

// convert reads every option of the service file.
func (c *sdConv) convert(opts []*unit.UnitOption) {
	for _, o := range opts {
		key := o.Section + "." + o.Name
		v, unknown := specifiers(o.Value, c.name)
		if o.Name == "WorkingDirectory" && strings.HasPrefix(strings.TrimPrefix(o.Value, "-"), "%h") {
			v, unknown = specifiers(strings.Replace(o.Value, "%h", "~", 1), c.name)
		}
		for _, u := range unknown {
			c.n.add(key, "specifier %s has no meaning outside systemd; left as written", u)
		}
		var h func(*sdConv, string, string)
		switch o.Section {
		case "Unit":
			h = unitSectionKeys[o.Name]
		case "Service":
			h = serviceKeys[o.Name]
		case "Install":
			c.n.add(key, "hermesd starts every unit of its directory when it starts: nothing to enable")
			continue
		default:
			c.n.add(key, "section [%s] has no hermes equivalent", o.Section)
			continue
		}
		if h == nil {
			c.n.add(key, gapReason(o.Section, o.Name))
			continue
		}
		h(c, key, v)
	}
}

// gapReason says why a key no table maps is left out.
func gapReason(section, name string) string {
	if why, ok := serviceGaps[name]; ok {
		return why
	}
	switch {
	case strings.HasPrefix(name, "Limit") || strings.HasPrefix(name, "Memory") || strings.HasPrefix(name, "CPU") ||
		strings.HasPrefix(name, "IO") || strings.HasPrefix(name, "Tasks"):
		return whyLimits
	case strings.HasPrefix(name, "Protect") || strings.HasPrefix(name, "Private") || strings.HasPrefix(name, "Restrict") ||
		strings.HasSuffix(name, "Paths") || strings.HasPrefix(name, "Capability") || strings.HasPrefix(name, "System"):
		return "hermes does not sandbox units"
	case strings.HasPrefix(name, "Condition") || strings.HasPrefix(name, "Assert"):
		return "hermes has no start conditions: the unit always starts"
	}
	return fmt.Sprintf("%s= has no hermes equivalent", name)
}

// serviceGaps are keys with a reason of their own.
var serviceGaps = map[string]string{
	"DynamicUser":               whyUser,
	"OOMScoreAdjust":            whyLimits,
	"ExecStop":                  "hermes stops a unit with stop_signal, then KILL after timeouts.stop; it runs no stop command",
	"ExecStopPost":              "hermes runs no command after a unit stops",
	"ExecCondition":             "hermes has no start conditions: the unit always starts",
	"KillMode":                  "hermes always stops the whole group (cgroup or process group), as KillMode=control-group",
	"FinalKillSignal":           "hermes sends KILL after timeouts.stop",
	"SendSIGKILL":               "hermes always sends KILL after timeouts.stop",
	"SendSIGHUP":                "hermes sends only stop_signal, then KILL",
	"NotifyAccess":              "hermes takes READY=1 and WATCHDOG=1 from any process of the unit",
	"StandardInput":             "a unit's stdin is /dev/null",
	"SyslogIdentifier":          "a unit's output goes to its log file, not to syslog",
	"Documentation":             "hermes keeps no documentation link; put it in description: or a comment",
	"DefaultDependencies":       "hermes adds no implicit dependencies",
	"Before":                    "hermes orders by after: on the unit that comes later; write after: in that unit",
	"PartOf":                    "hermes has no PartOf=: a stop or restart of that unit does not reach this one",
	"Conflicts":                 "hermes has no conflicts between units",
	"OnFailure":                 "hermes starts no unit on another's failure",
	"OnSuccess":                 "hermes starts no unit on another's success",
	"Requisite":                 "hermes has no Requisite=; requires: is the closest",
	"RestartSteps":              "hermes doubles the backoff from restart_sec up to restart_max_sec",
	"RestartPreventExitStatus":  "hermes restarts by restart: alone, whatever the exit status",
	"RestartForceExitStatus":    "hermes restarts by restart: alone, whatever the exit status",
	"SuccessExitStatus":         "hermes counts only exit 0 as success",
	"GuessMainPID":              "hermes finds a forking unit's main process itself (pid_file, or the one process left)",
	"BusName":                   "hermes has no D-Bus readiness",
	"TimeoutAbortSec":           "hermes has no watchdog abort: timeouts.stop applies",
	"RuntimeRandomizedExtraSec": "hermes has no random extra runtime",
}

// unitSectionKeys map the [Unit] options hermes has.
var unitSectionKeys = map[string]func(*sdConv, string, string){
	"Description":           func(c *sdConv, _, v string) { c.f.Description = v },
	"After":                 func(c *sdConv, k, v string) { c.f.After = c.deps(k, v, c.f.After) },
	"Requires":              (*sdConv).requires,
	"BindsTo":               (*sdConv).requires,
	"Wants":                 (*sdConv).wants,
	"StartLimitIntervalSec": (*sdConv).startLimitInterval,
	"StartLimitBurst":       (*sdConv).startLimitBurst,
}

// deps adds the .service units of a dependency list to list; the others
// (targets, sockets, mounts) are noted.
func (c *sdConv) deps(key, v string, list []string) []string {
	if v == "" {
		return nil // an empty assignment resets the list
	}
	for _, w := range strings.Fields(v) {
		name, ok := strings.CutSuffix(w, ".service")
		if !ok {
			c.n.add(key, "%s is not a service: hermes orders and binds units only to other units", w)
			continue
		}
		clean, err := cleanName(name)
		if err != nil {
			c.n.add(key, "%s cannot be a unit name", w)
			continue
		}
		if !slices.Contains(list, clean) {
			list = append(list, clean)
		}
	}
	return list
}

func (c *sdConv) requires(key, v string) {
	before := len(c.f.Requires)
	c.f.Requires = c.deps(key, v, c.f.Requires)
	if len(c.f.Requires) > before && strings.HasSuffix(key, ".Requires") {
		c.n.add(key, "mapped to requires:, which also stops this unit when the other fails or exits (systemd's BindsTo=), not only when it is stopped")
	}
}

func (c *sdConv) wants(key, v string) {
	for _, w := range strings.Fields(v) {
		c.n.add(key, "%s: hermes has no weak dependency; every unit of the directory starts anyway, and after: orders", w)
	}
}

func (c *sdConv) startLimitInterval(key, v string) {
	switch s, off := c.span(key, v, "start limit interval", units.MaxDelay); {
	case off:
		c.n.add(key, "%s turns the start limit off in systemd; hermes always bounds restarts (start_limit.burst at most %d)", v, units.MaxBurst)
	case s != "":
		c.startLimit().Interval = s
	}
}

func (c *sdConv) startLimitBurst(key, v string) {
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 1 || n > units.MaxBurst {
		c.n.add(key, "%q is not a burst from 1 to %d", v, units.MaxBurst)
		return
	}
	c.startLimit().Burst = n
}

func (c *sdConv) startLimit() *StartLimit {
	if c.f.StartLimit == nil {
		c.f.StartLimit = &StartLimit{}
	}
	return c.f.StartLimit
}

func (c *sdConv) timeouts() *Timeouts {
	if c.f.Timeouts == nil {
		c.f.Timeouts = &Timeouts{}
	}
	return c.f.Timeouts
}
