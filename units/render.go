package units

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// MarshalYAML renders the unit in canonical form (a value receiver, so
// that yaml.Marshal of a Spec and of a *Spec agree): keys in a fixed order
// (the order of the unit reference), every effective value written out
// (defaults included), durations as Go durations, seconds keys as whole
// seconds, sizes in the largest exact binary unit, signals by name, env
// sorted by name. Parsing the rendering under the same file name and
// defaults gives back an equal Spec. Name and File are not part of it
// (they come from the file's path).
func (s Spec) MarshalYAML() (any, error) {
	m := &mapNode{}
	m.str("description", s.Description, false)
	m.str("type", string(s.typ()), true)
	if len(s.Command) > 0 {
		m.list("command", s.Command)
	}
	m.str("shell", s.Shell, false)
	m.str("pid_file", s.PIDFile, false)
	if s.RemainAfter {
		m.add("remain_after_exit", scalar("!!bool", "true"))
	}
	m.str("workdir", s.Workdir, false)
	if len(s.Env) > 0 {
		env := &mapNode{}
		for _, k := range sortedKeys(s.Env) {
			env.str(k, s.Env[k], true)
		}
		m.add("env", env.node())
	}
	s.Exec.render(m)
	m.str("ownership", string(s.Ownership), true)
	m.str("reason", s.Reason, false)
	m.str("restart", string(s.Restart), true)
	m.dur("restart_sec", s.RestartSec)
	m.dur("restart_max_sec", s.RestartMax)
	sl := &mapNode{}
	sl.int("burst", int64(s.StartLimit.Burst))
	sl.dur("interval", s.StartLimit.Interval)
	m.add("start_limit", sl.node())
	if len(s.After) > 0 {
		m.list("after", s.After)
	}
	if len(s.Requires) > 0 {
		m.list("requires", s.Requires)
	}
	if s.Ready != (Ready{}) {
		r := &mapNode{}
		r.str("tcp", s.Ready.TCP, false)
		r.str("http", s.Ready.HTTP, false)
		if s.Ready.Notify {
			r.add("notify", scalar("!!bool", "true"))
		}
		r.str("log", s.Ready.Log, false)
		m.add("ready", r.node())
	}
	t := &mapNode{}
	t.dur("start", s.Timeouts.Start)
	t.dur("stop", s.Timeouts.Stop)
	t.dur("runtime_max", s.Timeouts.RuntimeMax)
	t.dur("watchdog", s.Timeouts.Watchdog)
	m.add("timeouts", t.node())
	m.str("stop_signal", s.StopSignal.String(), true)
	if s.ReloadSignal != 0 {
		m.str("reload_signal", s.ReloadSignal.String(), true)
	}
	if len(s.Reload) > 0 {
		m.list("reload", s.Reload)
	}
	if len(s.Ports) > 0 {
		ports := make([]string, len(s.Ports))
		for i, p := range s.Ports {
			ports[i] = strconv.Itoa(p)
		}
		m.add("ports", seq("!!int", ports))
	}
	l := &mapNode{}
	l.str("path", s.Log.Path, false)
	l.str("max_size", s.Log.MaxSize.String(), true)
	l.int("keep", int64(s.Log.Keep))
	m.add("log", l.node())
	m.str("schedule", s.Schedule, false)
	if s.RunBudget > 0 {
		m.seconds("run_budget_seconds", s.RunBudget)
	}
	if s.WrapupSig != 0 {
		m.str("wrapup_signal", s.WrapupSig.String(), true)
	}
	if s.Provider != nil {
		m.add("provider", providerNode(s.Provider, true))
	}
	if s.ProxyEnv {
		m.add("proxy_env", scalar("!!bool", "true"))
	}
	return m.node(), nil
}

func providerNode(p *Provider, withID bool) *yaml.Node {
	m := &mapNode{}
	if withID {
		m.str("id", p.ID, true)
	}
	m.str("base_url", p.BaseURL, false)
	m.str("api_key_env", p.APIKeyEnv, false)
	m.str("api_key_file", p.APIKeyFile, false)
	if p.StaleTimeout > 0 {
		m.seconds("stale_timeout_seconds", p.StaleTimeout)
	}
	if len(p.Models) > 0 {
		models := &mapNode{}
		for _, k := range sortedKeys(p.Models) {
			mm := &mapNode{}
			if st := p.Models[k].StaleTimeout; st > 0 {
				mm.seconds("stale_timeout_seconds", st)
			}
			models.add(k, mm.node())
		}
		m.add("models", models.node())
	}
	if len(p.Tiers) > 0 {
		tiers := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, t := range p.Tiers {
			tm := &mapNode{}
			tm.int("above_tokens", int64(t.AboveTokens))
			tm.seconds("seconds", t.Timeout)
			tiers.Content = append(tiers.Content, tm.node())
		}
		m.add("tiers", tiers)
	}
	if len(p.Floors) > 0 {
		floors := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, f := range p.Floors {
			fm := &mapNode{}
			fm.str("slug", f.Slug, true)
			fm.seconds("seconds", f.Timeout)
			floors.Content = append(floors.Content, fm.node())
		}
		m.add("floors", floors)
	}
	return m.node()
}

// Hash is a canonical digest (hex SHA-256) of the fields that need a
// restart to take effect: type, pid file, argv (command or shell), workdir, env,
// ownership, ports, readiness probe, stop signal, timeouts, log path and
// rotation, and the run budget (a job receives its deadline at spawn). It
// leaves out what applies without a restart or only documents:
// description, reason, remain_after_exit, restart policy and backoff, start limits, after,
// requires, schedule, wrap-up signal, reload signal and command, provider. It depends only on the
// parsed values, so reformatting a file, reordering keys or editing
// comments leaves it unchanged; the reconciler restarts a unit when its
// Hash changes (SPEC §6).
func (s *Spec) Hash() string {
	h := Spec{
		Type: s.Type, PIDFile: s.PIDFile,
		Command: s.Command, Shell: s.Shell, Workdir: s.Workdir, Env: s.Env,
		Ownership: s.Ownership, Ports: s.Ports, Ready: s.Ready,
		StopSignal: s.StopSignal, Timeouts: s.Timeouts, Log: s.Log,
		RunBudget: s.RunBudget, ProxyEnv: s.ProxyEnv,
	}
	n, _ := h.MarshalYAML()
	out, err := yaml.Marshal(n)
	if err != nil {
		// Every node above is built from strings: Marshal cannot fail.
		panic("units: rendering a spec: " + err.Error())
	}
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:])
}

// typ is the unit's type; a Spec built by hand without one is simple.
func (s *Spec) typ() Type {
	if s.Type == "" {
		return Simple
	}
	return s.Type
}

// mapNode builds a YAML mapping in insertion order.
type mapNode struct{ content []*yaml.Node }

func (m *mapNode) node() *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: m.content}
}

func (m *mapNode) add(key string, v *yaml.Node) {
	m.content = append(m.content, scalar("!!str", key), v)
}

// str adds a string value; empty ones only when always is set.
func (m *mapNode) str(key, v string, always bool) {
	if v != "" || always {
		m.add(key, scalar("!!str", v))
	}
}

func (m *mapNode) int(key string, v int64) { m.add(key, scalar("!!int", strconv.FormatInt(v, 10))) }

func (m *mapNode) dur(key string, v time.Duration) { m.add(key, scalar("!!str", v.String())) }

func (m *mapNode) seconds(key string, v time.Duration) { m.int(key, int64(v/time.Second)) }

func (m *mapNode) list(key string, items []string) { m.add(key, seq("!!str", items)) }

func scalar(tag, v string) *yaml.Node {
	// The encoder quotes a !!str whose plain form would read back as
	// another type ("8080", "true", "~").
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

func seq(tag string, items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, it := range slices.Clone(items) {
		n.Content = append(n.Content, scalar(tag, it))
	}
	return n
}
