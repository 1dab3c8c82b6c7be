package timeouts

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Default context tiers (SPEC §10). A provider's own tiers replace both.
var (
	streamTiers    = []Tier{{50_000, 240 * time.Second}, {100_000, 300 * time.Second}}
	nonStreamTiers = []Tier{{50_000, 150 * time.Second}, {100_000, 240 * time.Second}}
)

// Resolve computes the timeout stack of one call. It is pure: no clock, no
// environment, no I/O; every path that waits (the proxy's streaming and
// non-streaming paths, a scheduled job's calls, `hermesctl timeouts
// explain`) calls it with the same Inputs and gets the same Plan.
//
// Stale detectors (stale stream, stale non-stream) resolve in this order:
//
//  1. Explicit config: providers.<id>.models.<model>.stale_timeout_seconds,
//     then providers.<id>.stale_timeout_seconds. Taken as is on both paths:
//     never scaled, floored or capped, and it may shorten patience.
//  2. Streaming only: HERMES_STREAM_STALE_TIMEOUT, the user's own deadline,
//     taken as is (not capped by the run budget nor the hard cap). Config
//     beats it because it is the more specific setting: per provider or
//     per model, where the variable is process-wide.
//  3. Otherwise the value is implicit. On a local endpoint it starts at the
//     local ceiling (agent.local_stream_stale_timeout, 900 s by default, for
//     both paths: one knob for local silence), which is neither scaled nor
//     floored: it already exceeds every built-in tier and floor. Elsewhere it
//     starts at the default (180 s streaming, 90 s non-streaming), is raised
//     by the context tier (the provider's tiers if it declares any, else the
//     path's default tiers) and then by the model floor, each as max().
//  4. Implicit values are then capped by the run budget (RunBudget.Cap,
//     the same function for both paths) and by agent.stale_timeout_hard_cap.
//
// Other layers: the first-event watchdog follows an explicit stale-stream
// value when there is one (the operator's patience for silence), else it
// is 120 s (900 s local) and capped like the implicit stale values. The
// socket read timeout is 120 s (1800 s local); on a non-streaming call,
// where no byte arrives before the whole answer, it and the API call
// timeout (1800 s) are raised to cover the stale non-stream value, so that
// a model floor is not undone by a transport timeout firing first. On a
// stream, keep-alives and reasoning events keep bytes flowing, so the
// socket read timeout stays as the table says. Neither is capped by the
// budget: the stale detector inside them is. The drain is
// agent.stream_drain_timeout or 2 s.
//
// Every value is in (0, MaxTimeout]. Invalid inputs (negative settings, an
// unparsable knob) are ignored and named in Plan.Warnings.
func Resolve(in Inputs) Plan {
	r := resolver{in: in}
	return r.resolve()
}

type resolver struct {
	in       Inputs
	plan     Plan
	local    bool
	run      RunBudget
	hardCap  time.Duration
	localCap time.Duration
	// explicit is the operator's stale value for both paths, if any.
	explicit    time.Duration
	explicitSrc string
	// envStale is HERMES_STREAM_STALE_TIMEOUT, if set and valid.
	envStale time.Duration
	envText  string
}

func (r *resolver) warn(format string, args ...any) {
	r.plan.Warnings = append(r.plan.Warnings, fmt.Sprintf(format, args...))
}

func (r *resolver) resolve() Plan {
	in := r.in
	r.plan = Plan{Provider: in.Provider.ID, Model: in.Model, Stream: in.Stream, API: in.API, Tokens: max(in.Tokens, 0)}
	switch {
	case in.Thinking:
		r.plan.Thinking, r.plan.ThinkingReason = true, "the request enables thinking"
	case ThinkingModel(in.Model):
		r.plan.Thinking, r.plan.ThinkingReason = true, "the model id names a thinking variant"
	}
	r.local, r.plan.LocalReason = Local(in.Provider.BaseURL)
	r.plan.Local = r.local
	r.sanitize()
	r.explicit, r.explicitSrc = r.explicitStale()
	r.envStale, r.envText = r.envStaleTimeout()
	r.giveUp()
	if limit, ok := r.run.Limit(); ok {
		r.plan.Budget, r.plan.Remaining = limit, r.run.Remaining()
		r.plan.Spent = r.run.Exhausted()
	}

	r.plan.layers[StaleStream] = r.stale(StaleStream)
	r.plan.layers[StaleNonStream] = r.stale(StaleNonStream)
	r.plan.layers[FirstEvent] = r.firstEvent()
	r.plan.layers[SocketRead] = r.socketRead()
	r.plan.layers[APICall] = r.apiCall()
	r.plan.layers[Drain] = r.drain()

	applies := [numLayers]bool{
		SocketRead:     true,
		StaleStream:    in.Stream,
		StaleNonStream: !in.Stream,
		FirstEvent:     in.Stream && in.API == Responses,
		APICall:        !in.Stream,
		Drain:          in.Stream,
	}
	for l := range r.plan.layers {
		r.plan.layers[l].Layer = Layer(l)
		r.plan.layers[l].Applies = applies[l]
	}
	return r.plan
}

// sanitize turns out-of-range settings into "unset", with a warning.
func (r *resolver) sanitize() {
	a := r.in.Agent
	r.run = r.in.Run
	if r.run.Total < 0 {
		r.warn("run budget %s is negative: ignored", r.run.Total)
		r.run = RunBudget{}
	}
	r.run.Spent = max(r.run.Spent, 0)
	if a.StaleTimeoutHardCap < 0 {
		r.warn("agent.stale_timeout_hard_cap %s is negative: ignored", a.StaleTimeoutHardCap)
	} else {
		r.hardCap = a.StaleTimeoutHardCap
	}
	r.localCap = LocalStaleStream
	if a.LocalStreamStaleTimeout < 0 {
		r.warn("agent.local_stream_stale_timeout %s is negative: the %s default applies", a.LocalStreamStaleTimeout, Seconds(LocalStaleStream))
	} else if a.LocalStreamStaleTimeout > 0 {
		r.localCap = min(a.LocalStreamStaleTimeout, MaxTimeout)
	}
}

func (r *resolver) source() string {
	p := r.in.Provider
	if p.Source != "" {
		return p.Source
	}
	if p.ID != "" {
		return "providers." + p.ID
	}
	return "provider"
}

// explicitStale finds the operator's stale timeout: the model's, then the
// provider's. The model is looked up by exact key, then case-insensitively,
// then by the part after the last "/" on either side.
func (r *resolver) explicitStale() (time.Duration, string) {
	p := r.in.Provider
	if key, m, ok := lookupModel(p.Models, r.in.Model); ok {
		if m.StaleTimeout > 0 {
			return m.StaleTimeout, fmt.Sprintf("%s.models.%s.stale_timeout_seconds", r.source(), key)
		}
		if m.StaleTimeout < 0 {
			r.warn("%s.models.%s.stale_timeout_seconds is negative: ignored", r.source(), key)
		}
	}
	if p.StaleTimeout > 0 {
		return p.StaleTimeout, r.source() + ".stale_timeout_seconds"
	}
	if p.StaleTimeout < 0 {
		r.warn("%s.stale_timeout_seconds is negative: ignored", r.source())
	}
	return 0, ""
}

func lookupModel(models map[string]Model, model string) (string, Model, bool) {
	if len(models) == 0 || model == "" {
		return "", Model{}, false
	}
	if m, ok := models[model]; ok {
		return model, m, true
	}
	keys := slices.Sorted(maps.Keys(models))
	for _, k := range keys {
		if strings.EqualFold(k, model) {
			return k, models[k], true
		}
	}
	last := lastSegment(model)
	for _, k := range keys {
		if strings.EqualFold(lastSegment(k), last) {
			return k, models[k], true
		}
	}
	return "", Model{}, false
}

func lastSegment(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ParseSeconds parses a timeout knob: seconds ("150", "2.5") or a Go
// duration ("2m30s"). Zero, negative, non-finite and overflowing values are
// errors wrapping ErrInvalid.
func ParseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || f <= 0 || f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("%w: %q is not a positive finite number of seconds", ErrInvalid, s)
		}
		d := time.Duration(f * float64(time.Second))
		if d <= 0 {
			return 0, fmt.Errorf("%w: %q rounds to zero", ErrInvalid, s)
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %q is neither seconds nor a positive duration like 2m30s", ErrInvalid, s)
	}
	return d, nil
}

// ParseRemaining parses what is left of a run budget: as ParseSeconds, and
// zero ("0", "0s") for a budget that is spent. Negative, non-finite and
// unparsable values are errors wrapping ErrInvalid.
func ParseRemaining(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(t, 64); err == nil && f == 0 {
		return 0, nil
	}
	if d, err := time.ParseDuration(t); err == nil && d == 0 {
		return 0, nil
	}
	d, err := ParseSeconds(t)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number of seconds ≥ 0 nor a duration like 5m (0 is a spent budget)", ErrInvalid, t)
	}
	return d, nil
}

func (r *resolver) lookup(key string) (string, bool) {
	if r.in.Env == nil {
		return "", false
	}
	v, ok := r.in.Env(key)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return v, true
}

func (r *resolver) envStaleTimeout() (time.Duration, string) {
	v, ok := r.lookup(EnvStaleTimeout)
	if !ok {
		return 0, ""
	}
	d, err := ParseSeconds(v)
	if err != nil {
		r.warn("%s=%q ignored: %v", EnvStaleTimeout, v, err)
		return 0, ""
	}
	return d, fmt.Sprintf("env %s=%s", EnvStaleTimeout, strings.TrimSpace(v))
}

func (r *resolver) giveUp() {
	r.plan.GiveUp = DefaultGiveUp
	r.plan.GiveUpSource = fmt.Sprintf("default %d consecutive stale kills", DefaultGiveUp)
	v, ok := r.lookup(EnvGiveUp)
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		r.warn("%s=%q ignored: want a count ≥ 0 (0 disables the breaker)", EnvGiveUp, v)
		return
	}
	r.plan.GiveUp = n
	if n == 0 {
		r.plan.GiveUpSource = fmt.Sprintf("disabled by env %s=0", EnvGiveUp)
	} else {
		r.plan.GiveUpSource = fmt.Sprintf("env %s=%d consecutive stale kills", EnvGiveUp, n)
	}
}

// chain accumulates a value and its provenance.
type chain struct{ v Value }

func (c *chain) set(k StepKind, d time.Duration, text string) {
	c.v.Timeout = d
	c.v.Chain = append(c.v.Chain, Step{Kind: k, Value: d, Text: text})
}

func (c *chain) note(k StepKind, text string) {
	c.v.Chain = append(c.v.Chain, Step{Kind: k, Value: c.v.Timeout, Text: text})
}

// raise applies max(value, d) and records the step even when it did not
// move the value, so explain shows every rule that matched.
func (c *chain) raise(k StepKind, d time.Duration, label string) {
	c.set(k, max(c.v.Timeout, d), fmt.Sprintf("%s: %s", label, Seconds(max(c.v.Timeout, d))))
}

// clamp keeps a value at or under MaxTimeout.
func (c *chain) clamp() {
	if c.v.Timeout > MaxTimeout {
		c.set(StepClamp, MaxTimeout, fmt.Sprintf("clamped to the %s maximum: %s", MaxTimeout, Seconds(MaxTimeout)))
	}
}

func (r *resolver) stale(l Layer) Value {
	var c chain
	switch {
	case r.explicit > 0:
		c.v.Explicit = true
		c.set(StepExplicit, r.explicit, fmt.Sprintf("explicit: %s = %s", r.explicitSrc, Seconds(r.explicit)))
		if f, ok := MatchFloor(r.in.Model, r.plan.Thinking, r.in.Provider.Floors); ok && f.Timeout > r.explicit {
			c.note(StepFloor, fmt.Sprintf("model floor %s (%s) not applied: explicit wins", f.Slug, Seconds(f.Timeout)))
		}
		c.clamp()
		return c.v
	case l == StaleStream && r.envStale > 0:
		c.v.Explicit = true
		c.set(StepEnv, r.envStale, fmt.Sprintf("%s: %s (the user's deadline, never capped)", r.envText, Seconds(r.envStale)))
		c.clamp()
		return c.v
	case r.local:
		if r.in.Agent.LocalStreamStaleTimeout > 0 {
			c.set(StepAgent, r.localCap, fmt.Sprintf("agent.local_stream_stale_timeout: %s", Seconds(r.localCap)))
		} else {
			c.set(StepLocal, r.localCap, fmt.Sprintf("local endpoint ceiling %s", Seconds(r.localCap)))
		}
	default:
		def, tiers, src := DefaultStaleStream, streamTiers, ""
		if l == StaleNonStream {
			def, tiers = DefaultStaleNonStream, nonStreamTiers
		}
		if len(r.in.Provider.Tiers) > 0 {
			tiers, src = r.in.Provider.Tiers, " ("+r.source()+".tiers)"
		}
		c.set(StepDefault, def, "default "+Seconds(def))
		if t, ok := pickTier(tiers, r.plan.Tokens); ok {
			c.raise(StepTier, min(t.Timeout, MaxTimeout), fmt.Sprintf("context tier >%s%s", tokens(t.AboveTokens), src))
		}
		r.floor(&c)
	}
	r.capImplicit(&c)
	return c.v
}

// floor raises an implicit value to the model floor that covers the call,
// and notes a floor that matches the model but not the call (the 240 s
// Opus floor on a call without thinking), so that explain shows why it
// did not apply.
func (r *resolver) floor(c *chain) {
	floors := r.in.Provider.Floors
	applied, ok := MatchFloor(r.in.Model, r.plan.Thinking, floors)
	if ok {
		label := "model floor " + applied.Slug
		if applied.When != Always {
			label += " (" + applied.When.String() + " calls)"
		}
		c.raise(StepFloor, min(applied.Timeout, MaxTimeout), label)
	}
	best, found := matchFloor(r.in.Model, floors, func(Floor) bool { return true })
	if found && !best.When.covers(r.plan.Thinking) && (!ok || best.Slug != applied.Slug) {
		c.note(StepFloor, fmt.Sprintf("model floor %s (%s) covers %s calls only, not this one: %s",
			best.Slug, Seconds(best.Timeout), best.When, Seconds(c.v.Timeout)))
	}
}

// capImplicit is the single place implicit values meet the run budget and
// the hard cap, for every layer it applies to.
func (r *resolver) capImplicit(c *chain) {
	if limit, ok := r.run.Limit(); ok && c.v.Timeout > limit {
		text := fmt.Sprintf("budget cap max(%s, %s remaining / 2): %s", Seconds(MinBudgetCap), Seconds(r.run.Remaining()), Seconds(limit))
		if r.run.Remaining()/2 < MinBudgetCap {
			text += fmt.Sprintf(", the minimum: half the remaining budget (%s) is under %s", Seconds(r.run.Remaining()/2), Seconds(MinBudgetCap))
		}
		c.set(StepBudget, limit, text)
	}
	if r.hardCap > 0 && c.v.Timeout > r.hardCap {
		c.set(StepHardCap, r.hardCap, fmt.Sprintf("hard cap (agent.stale_timeout_hard_cap): %s", Seconds(r.hardCap)))
	}
	c.clamp()
}

// pickTier returns the highest tier whose threshold the context exceeds.
func pickTier(tiers []Tier, tok int) (Tier, bool) {
	var best Tier
	found := false
	for _, t := range tiers {
		if t.Timeout <= 0 || tok <= t.AboveTokens {
			continue
		}
		if !found || t.AboveTokens > best.AboveTokens {
			best, found = t, true
		}
	}
	return best, found
}

func tokens(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

func (r *resolver) firstEvent() Value {
	var c chain
	stream := r.plan.layers[StaleStream]
	if stream.Explicit {
		c.v.Explicit = true
		c.set(StepFollow, stream.Timeout, fmt.Sprintf("follows the explicit stale stream value: %s", Seconds(stream.Timeout)))
		return c.v
	}
	if r.local {
		c.set(StepLocal, LocalFirstEvent, "local endpoint ceiling "+Seconds(LocalFirstEvent))
	} else {
		c.set(StepDefault, DefaultFirstEvent, "default "+Seconds(DefaultFirstEvent))
	}
	r.capImplicit(&c)
	return c.v
}

func (r *resolver) socketRead() Value {
	var c chain
	if r.local {
		c.set(StepLocal, LocalSocketRead, "local endpoint ceiling "+Seconds(LocalSocketRead))
	} else {
		c.set(StepDefault, DefaultSocketRead, "default "+Seconds(DefaultSocketRead))
	}
	if !r.in.Stream {
		if d := r.plan.layers[StaleNonStream].Timeout; d > c.v.Timeout {
			c.set(StepRaise, d, fmt.Sprintf("raised to cover %s: %s", StaleNonStream.Title(), Seconds(d)))
		}
	}
	return c.v
}

func (r *resolver) apiCall() Value {
	var c chain
	c.set(StepDefault, DefaultAPICall, "default "+Seconds(DefaultAPICall))
	if d := r.plan.layers[StaleNonStream].Timeout; d > c.v.Timeout {
		c.set(StepRaise, d, fmt.Sprintf("raised to cover %s: %s", StaleNonStream.Title(), Seconds(d)))
	}
	return c.v
}

func (r *resolver) drain() Value {
	var c chain
	switch d := r.in.Agent.StreamDrainTimeout; {
	case d > 0:
		c.set(StepAgent, min(d, MaxTimeout), "agent.stream_drain_timeout: "+Seconds(min(d, MaxTimeout)))
	default:
		if d < 0 {
			r.warn("agent.stream_drain_timeout %s is negative: the %s default applies", d, Seconds(DefaultDrain))
		}
		c.set(StepDefault, DefaultDrain, "default "+Seconds(DefaultDrain))
	}
	return c.v
}
