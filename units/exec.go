package units

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Exec is how a unit's processes run: as whom, with which limits, and
// with which environment files. A unit file and hermes.yaml's defaults:
// set it with the same keys; a unit's key replaces the default's, except
// limits:, merged by resource (a unit's nofile replaces the default's
// nofile and keeps its core).
type Exec struct {
	// EnvFiles are read when the unit starts, in order, each KEY=value
	// line as systemd's EnvironmentFile= and docker's env_file read them
	// (see ParseEnv); a later file's variable replaces an earlier one's,
	// and the unit's env: replaces them all.
	EnvFiles []EnvFile
	// User is the user the unit's processes run as: a name or a uid; ""
	// is hermesd's own. Setting it needs hermesd to run as root.
	User string
	// Group is their group (a name or a gid); "" is the user's primary
	// group (hermesd's own when User is "").
	Group string
	// Groups are the supplementary groups (names or gids). nil is the
	// user's own from the group database, as systemd's User= gives; an
	// empty list is none.
	Groups []string
	// Umask is the file mode creation mask (umask:, octal); nil keeps
	// hermesd's.
	Umask *uint32
	// Nice is the scheduling niceness, -20 (first) to 19 (last); nil keeps
	// hermesd's.
	Nice *int
	// Limits are resource limits (setrlimit), by resource name
	// (RlimitNames); a resource not set keeps hermesd's.
	Limits map[string]Rlimit
	// Cgroup holds limits written into the unit's cgroup, in cgroup mode.
	Cgroup CgroupLimits
}

// EnvFile is one env_file: entry.
type EnvFile struct {
	Path     string // absolute
	Optional bool   // written with a leading "-": a missing file is no error
}

// String is the entry as written: the path, after "-" when optional.
func (e EnvFile) String() string {
	if e.Optional {
		return "-" + e.Path
	}
	return e.Path
}

// Rlimit is one resource limit: the soft limit a process gets, and the
// hard one it may raise it to. Infinity is no limit.
type Rlimit struct {
	Soft, Hard uint64
}

// Infinity is an Rlimit value without limit (RLIM_INFINITY).
const Infinity = math.MaxUint64

// RlimitNames are the resources limits: accepts, as systemd's Limit*=
// keys name them (LimitNOFILE= is nofile).
var RlimitNames = rlimitFields.names()

// rlimitFields are the keys of limits:, one resource each.
var rlimitFields = keyed[*Exec]{
	{"as", takes(KindRlimit, "Address space, bytes."), (*decoder).limit},
	{"core", takes(KindRlimit, "Core file size, bytes."), (*decoder).limit},
	{"cpu", takes(KindRlimit, "CPU time, seconds."), (*decoder).limit},
	{"data", takes(KindRlimit, "Data segment, bytes."), (*decoder).limit},
	{"fsize", takes(KindRlimit, "File size, bytes."), (*decoder).limit},
	{"locks", takes(KindRlimit, "File locks."), (*decoder).limit},
	{"memlock", takes(KindRlimit, "Locked memory, bytes."), (*decoder).limit},
	{"msgqueue", takes(KindRlimit, "POSIX message queues, bytes."), (*decoder).limit},
	{"nice", takes(KindRlimit, "Ceiling of the nice value (20 - nice)."), (*decoder).limit},
	{"nofile", takes(KindRlimit, "Open files."), (*decoder).limit},
	{"nproc", takes(KindRlimit, "Processes of the user."), (*decoder).limit},
	{"rss", takes(KindRlimit, "Resident set, bytes."), (*decoder).limit},
	{"rtprio", takes(KindRlimit, "Real-time priority ceiling."), (*decoder).limit},
	{"rttime", takes(KindRlimit, "Real-time CPU time, microseconds."), (*decoder).limit},
	{"sigpending", takes(KindRlimit, "Queued signals."), (*decoder).limit},
	{"stack", takes(KindRlimit, "Stack size, bytes."), (*decoder).limit},
}

// CgroupLimits are written into a unit's cgroup when hermesd runs in
// cgroup mode and the controller is delegated to it; zero is none.
type CgroupLimits struct {
	MemoryMax Size // memory.max
	CPUWeight int  // cpu.weight, 1 to 10000 (100 is the kernel's default)
	CPUMax    int  // cpu.max as a percentage of one CPU: 150 is one and a half
	TasksMax  int  // pids.max
}

// Bounds of the exec keys.
const (
	MaxCPUWeight = 10000
	MaxCPUMax    = 100000 // a thousand CPUs
	MaxTasks     = 1 << 22
)

// clone is e with its own slices and map, so that a unit's decoding never
// writes into the defaults it started from.
func (e Exec) clone() Exec {
	e.EnvFiles = slices.Clone(e.EnvFiles)
	e.Groups = slices.Clone(e.Groups)
	e.Limits = maps.Clone(e.Limits)
	return e
}

// SetsIdentity reports whether e changes the user or the groups: what
// needs hermesd to run as root.
func (e *Exec) SetsIdentity() bool {
	return e.User != "" || e.Group != "" || e.Groups != nil
}

// execFields are the keys of Exec, in a unit file and in defaults:.
var execFields = keyed[*Exec]{
	{"env_file", takes(KindEnvFiles, "Files of KEY=value lines read when the unit starts, as systemd's EnvironmentFile= and docker's env_file (comments, blank lines, export, quotes); ~ and paths relative to the unit file (to hermes.yaml under defaults:) are expanded. A leading - marks a file that may be missing; a missing one without it fails the start. A later file's variable replaces an earlier one's."),
		func(d *decoder, e *Exec, f field) { e.EnvFiles = d.envFiles(f) }},
	{"user", takes(KindPrincipal, "User the unit's processes run as (a name or uid). Needs hermesd to run as root. Default: hermesd's user."), func(d *decoder, e *Exec, f field) { e.User = d.principal(f) }},
	{"group", takes(KindPrincipal, "Group they run as (a name or gid). Needs hermesd to run as root. Default: the user's primary group."), func(d *decoder, e *Exec, f field) { e.Group = d.principal(f) }},
	{"supplementary_groups", takes(KindGroups, "Supplementary groups (names or gids); [] for none. Needs hermesd to run as root. Default: the user's groups from the group database, as systemd's User=."), func(d *decoder, e *Exec, f field) {
		e.Groups = []string{}
		for _, g := range d.strings(f) {
			if !validPrincipal(g) {
				d.errf(f.val, "%s: %s is not a group name or number", f.path, excerpt(g))
				continue
			}
			e.Groups = append(e.Groups, g)
		}
	}},
	{"umask", takes(KindUmask, ""), func(d *decoder, e *Exec, f field) { e.Umask = d.umask(f) }},
	{"nice", between(-20, 19, "Scheduling niceness, -20 (first) to 19 (last). Default: hermesd's."), func(d *decoder, e *Exec, f field) {
		if n, ok := d.int(f); ok && (n < f.want.Min || n > f.want.Max) {
			d.errf(f.val, "%s: %d is out of range; allowed: %d (first) to %d (last)", f.path, n, f.want.Min, f.want.Max)
		} else if ok {
			v := int(n)
			e.Nice = &v
		}
	}},
	{"limits", block(KindBlock, rlimitFields, "Resource limits, by resource; a resource not set keeps hermesd's."), func(d *decoder, e *Exec, f field) { rlimitFields.decode(d, f.val, f.path, e) }},
	{"memory_max", takes(KindSize, "cgroup mode: memory.max of the unit's cgroup, where the memory controller is delegated (a warning names it where not)."), func(d *decoder, e *Exec, f field) { e.Cgroup.MemoryMax = d.size(f) }},
	{"cpu_weight", between(1, MaxCPUWeight, "cgroup mode: cpu.weight of the unit's cgroup (the kernel's default is 100), where the cpu controller is delegated."), func(d *decoder, e *Exec, f field) { e.Cgroup.CPUWeight = d.count(f) }},
	{"cpu_max", takes(KindPercent, "cgroup mode: cpu.max of the unit's cgroup as a percentage of one CPU (\"150%\" is one and a half), where the cpu controller is delegated."), func(d *decoder, e *Exec, f field) { e.Cgroup.CPUMax = d.percent(f) }},
	{"tasks_max", between(1, MaxTasks, "cgroup mode: pids.max of the unit's cgroup, where the pids controller is delegated."), func(d *decoder, e *Exec, f field) { e.Cgroup.TasksMax = d.count(f) }},
}

// validPrincipal reports whether s may name a user or a group: a name of
// the passwd and group databases (no ':', no space, no NUL), or a number.
func validPrincipal(s string) bool {
	return s != "" && len(s) <= 256 && !strings.ContainsAny(s, ": \t\n\x00/")
}

func (d *decoder) principal(f field) string {
	s := d.nonEmpty(f)
	if s != "" && !validPrincipal(s) {
		d.errf(f.val, "%s: %s is not a name or number of the user and group databases", f.path, excerpt(s))
		return ""
	}
	return s
}

// umask reads an octal mode mask: 0027, "027" or 27 all mean 027, as
// systemd's UMask= (always octal, whatever the YAML says).
func (d *decoder) umask(f field) *uint32 {
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		d.errf(f.val, "%s: want an octal mask like \"0027\", got %s", f.path, kindName(f.val))
		return nil
	}
	s := strings.TrimPrefix(strings.TrimPrefix(f.val.Value, "0o"), "0")
	if s == "" {
		s = "0"
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		d.errf(f.val, "%s: %s is not an octal mask from 0000 to 0777; write one like \"0027\"", f.path, excerpt(f.val.Value))
		return nil
	}
	m := uint32(v)
	return &m
}

// percent reads cpu_max: a percentage of one CPU, "150%" or 150.
func (d *decoder) percent(f field) int {
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		d.errf(f.val, "%s: want a percentage of one CPU like \"50%%\" or \"200%%\", got %s", f.path, kindName(f.val))
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(f.val.Value), "%"))
	if err != nil || n < 1 || n > MaxCPUMax {
		d.errf(f.val, "%s: %s is not a percentage of one CPU from 1%% to %d%%; write one like \"50%%\"", f.path, excerpt(f.val.Value), MaxCPUMax)
		return 0
	}
	return n
}

// limit reads one resource of limits: into e.Limits, over what is there
// (the defaults'): a unit's nofile replaces the default's and keeps its
// core.
func (d *decoder) limit(e *Exec, f field) {
	rl, ok := d.rlimit(f)
	if !ok {
		return
	}
	if e.Limits == nil {
		e.Limits = map[string]Rlimit{}
	}
	e.Limits[f.name] = rl
}

// rlimit reads one limit: a number or infinity for both the soft and the
// hard limit, or "soft:hard", as systemd's LimitNOFILE=.
func (d *decoder) rlimit(f field) (Rlimit, bool) {
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		d.errf(f.val, "%s: want a number, infinity, or soft:hard like \"1024:65536\", got %s", f.path, kindName(f.val))
		return Rlimit{}, false
	}
	rl, err := ParseRlimit(f.val.Value)
	if err != nil {
		d.errf(f.val, "%s: %v", f.path, err)
		return Rlimit{}, false
	}
	return rl, true
}

// ParseRlimit parses a limit as systemd's Limit*= keys take it: "1024"
// (soft and hard), "infinity", or "soft:hard" with either part infinity.
func ParseRlimit(s string) (Rlimit, error) {
	one := func(p string) (uint64, error) {
		p = strings.TrimSpace(p)
		if p == "infinity" || p == "unlimited" {
			return Infinity, nil
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || n == Infinity {
			return 0, fmt.Errorf("%s is not a limit: write a whole number, infinity, or soft:hard like \"1024:65536\"", excerpt(s))
		}
		return n, nil
	}
	soft, hard, pair := strings.Cut(s, ":")
	lo, err := one(soft)
	if err != nil {
		return Rlimit{}, err
	}
	if !pair {
		return Rlimit{Soft: lo, Hard: lo}, nil
	}
	hi, err := one(hard)
	if err != nil {
		return Rlimit{}, err
	}
	if lo > hi {
		return Rlimit{}, fmt.Errorf("soft limit %s is above the hard limit %s; the soft limit comes first", strings.TrimSpace(soft), strings.TrimSpace(hard))
	}
	return Rlimit{Soft: lo, Hard: hi}, nil
}

// String writes the limit as ParseRlimit reads it.
func (r Rlimit) String() string {
	one := func(v uint64) string {
		if v == Infinity {
			return "infinity"
		}
		return strconv.FormatUint(v, 10)
	}
	if r.Soft == r.Hard {
		return one(r.Soft)
	}
	return one(r.Soft) + ":" + one(r.Hard)
}

// envFiles reads env_file: one path or a list of them, each absolute or
// relative to the file's directory, a leading "-" marking it optional.
func (d *decoder) envFiles(f field) []EnvFile {
	var items []string
	switch {
	case isNull(f.val):
		return nil
	case f.val.Kind == yaml.ScalarNode:
		items = []string{d.nonEmpty(f)}
	default:
		items = d.strings(f)
	}
	out := make([]EnvFile, 0, len(items))
	for _, it := range items {
		p, opt := strings.CutPrefix(it, "-")
		if strings.TrimSpace(p) == "" {
			d.errf(f.val, "%s: an entry names no file", f.path)
			continue
		}
		path := d.path(field{name: f.name, path: f.path, key: f.key, val: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p, Line: f.val.Line, Column: f.val.Column}})
		if path != "" {
			out = append(out, EnvFile{Path: path, Optional: opt})
		}
	}
	return out
}

// render adds e's keys to a canonical rendering (see Spec.MarshalYAML).
func (e *Exec) render(m *mapNode) {
	if e.EnvFiles != nil {
		items := make([]string, len(e.EnvFiles))
		for i, f := range e.EnvFiles {
			items[i] = f.String()
		}
		m.list("env_file", items)
	}
	m.str("user", e.User, false)
	m.str("group", e.Group, false)
	if e.Groups != nil {
		m.list("supplementary_groups", e.Groups)
	}
	if e.Umask != nil {
		m.str("umask", fmt.Sprintf("%04o", *e.Umask), true)
	}
	if e.Nice != nil {
		m.int("nice", int64(*e.Nice))
	}
	if len(e.Limits) > 0 {
		l := &mapNode{}
		for _, k := range RlimitNames {
			if rl, ok := e.Limits[k]; ok {
				l.str(k, rl.String(), true)
			}
		}
		m.add("limits", l.node())
	}
	if e.Cgroup.MemoryMax > 0 {
		m.str("memory_max", e.Cgroup.MemoryMax.String(), true)
	}
	if e.Cgroup.CPUWeight > 0 {
		m.int("cpu_weight", int64(e.Cgroup.CPUWeight))
	}
	if e.Cgroup.CPUMax > 0 {
		m.str("cpu_max", strconv.Itoa(e.Cgroup.CPUMax)+"%", true)
	}
	if e.Cgroup.TasksMax > 0 {
		m.int("tasks_max", int64(e.Cgroup.TasksMax))
	}
}
