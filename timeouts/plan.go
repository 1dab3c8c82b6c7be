package timeouts

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// StepKind says what a provenance step did.
type StepKind int

const (
	StepDefault  StepKind = iota // the table's default
	StepLocal                    // a local endpoint ceiling
	StepAgent                    // an agent.* setting
	StepTier                     // a context tier raised the value
	StepFloor                    // a model floor raised the value
	StepBudget                   // the run budget capped the value
	StepHardCap                  // agent.stale_timeout_hard_cap capped the value
	StepExplicit                 // an explicit provider or model setting
	StepEnv                      // an environment knob
	StepRaise                    // raised to cover an inner detector
	StepClamp                    // clamped to MaxTimeout
	StepFollow                   // follows another layer's explicit value
)

// Step is one link of a provenance chain: what happened and the value after
// it. Text is the human form, e.g. "model floor o3: 600s".
type Step struct {
	Kind  StepKind
	Value time.Duration
	Text  string
}

// String returns Text.
func (s Step) String() string { return s.Text }

// MarshalText renders a step as its Text, so JSON chains read like the
// human ones.
func (s Step) MarshalText() ([]byte, error) { return []byte(s.Text), nil }

// Value is one layer's resolved timeout and the chain that produced it.
type Value struct {
	Layer   Layer
	Timeout time.Duration
	// Explicit is true when the value came from the operator (provider or
	// model config, or an environment knob) rather than from the rules.
	Explicit bool
	// Applies is false for layers the described call does not use (the
	// first-event watchdog on a chat call, the drain on a non-streaming
	// call); their values are still resolved, for explain.
	Applies bool
	Chain   []Step
}

// ChainString joins the chain with arrows.
func (v Value) ChainString() string {
	parts := make([]string, len(v.Chain))
	for i, s := range v.Chain {
		parts[i] = s.Text
	}
	return strings.Join(parts, " → ")
}

type valueJSON struct {
	Layer    Layer   `json:"layer"`
	Seconds  float64 `json:"seconds"`
	Explicit bool    `json:"explicit"`
	Applies  bool    `json:"applies"`
	Chain    []Step  `json:"chain"`
}

// MarshalJSON renders the timeout in seconds, the unit of the config files.
func (v Value) MarshalJSON() ([]byte, error) {
	return json.Marshal(valueJSON{v.Layer, v.Timeout.Seconds(), v.Explicit, v.Applies, v.Chain})
}

// Plan is the resolved timeout stack for one call: every layer's value with
// its provenance, and the breaker threshold. Plans are values; Resolve
// returns a fresh one each time.
type Plan struct {
	Provider string
	Model    string
	Stream   bool
	API      API
	Tokens   int
	// Thinking: the call is a thinking call, for ThinkingReason ("the
	// request enables thinking", "the model id names a thinking variant").
	Thinking       bool
	ThinkingReason string
	Local          bool
	LocalReason    string
	// Budget is the run-budget cap applied to implicit stale values, 0
	// when the run has no budget; Remaining is the budget left.
	Budget    time.Duration
	Remaining time.Duration
	// Spent: the run has spent its whole budget. Its calls are refused
	// with ErrBudgetSpent rather than resolved; the layers still say what a
	// call would have had.
	Spent bool
	// GiveUp is the breaker threshold (0 disables it) and GiveUpSource
	// where it came from.
	GiveUp       int
	GiveUpSource string
	// Warnings name inputs Resolve ignored (an unparsable environment
	// knob, a negative setting), so explain can show them.
	Warnings []string

	layers [numLayers]Value
}

// Get returns the value of layer l.
func (p Plan) Get(l Layer) Value {
	if l < 0 || l >= numLayers {
		return Value{Layer: l}
	}
	return p.layers[l]
}

// Timeout returns layer l's duration.
func (p Plan) Timeout(l Layer) time.Duration { return p.Get(l).Timeout }

// Stale returns the stale detector of the described call: StaleStream when
// streaming, StaleNonStream otherwise.
func (p Plan) Stale() Value {
	if p.Stream {
		return p.layers[StaleStream]
	}
	return p.layers[StaleNonStream]
}

// Values returns every layer in table order.
func (p Plan) Values() []Value { return append([]Value(nil), p.layers[:]...) }

type planJSON struct {
	Provider     string   `json:"provider"`
	Model        string   `json:"model"`
	Stream       bool     `json:"stream"`
	API          API      `json:"api"`
	Tokens       int      `json:"tokens"`
	Thinking     bool     `json:"thinking"`
	ThinkingWhy  string   `json:"thinking_reason,omitempty"`
	Local        bool     `json:"local"`
	LocalReason  string   `json:"local_reason,omitempty"`
	BudgetCap    float64  `json:"budget_cap_seconds,omitempty"`
	BudgetLeft   *float64 `json:"budget_remaining_seconds,omitempty"`
	BudgetSpent  bool     `json:"budget_spent,omitempty"`
	GiveUp       int      `json:"give_up"`
	GiveUpSource string   `json:"give_up_source"`
	Layers       []Value  `json:"layers"`
	Warnings     []string `json:"warnings,omitempty"`
}

// MarshalJSON is the `hermesctl timeouts explain -o json` contract.
func (p Plan) MarshalJSON() ([]byte, error) {
	var left *float64
	if p.Budget > 0 {
		v := p.Remaining.Seconds()
		left = &v
	}
	return json.Marshal(planJSON{
		BudgetLeft: left, BudgetSpent: p.Spent,
		Provider: p.Provider, Model: p.Model, Stream: p.Stream, API: p.API, Tokens: p.Tokens,
		Thinking: p.Thinking, ThinkingWhy: p.ThinkingReason,
		Local: p.Local, LocalReason: p.LocalReason, BudgetCap: p.Budget.Seconds(),
		GiveUp: p.GiveUp, GiveUpSource: p.GiveUpSource, Layers: p.Values(), Warnings: p.Warnings,
	})
}

// String renders the plan as the human table of `hermesctl timeouts
// explain`: a header line, then one row per layer.
func (p Plan) String() string {
	var b strings.Builder
	mode := "non-streaming"
	if p.Stream {
		mode = "streaming"
	}
	where := "cloud endpoint"
	if p.Local {
		where = "local endpoint (" + p.LocalReason + ")"
	}
	thinking := "without thinking"
	if p.Thinking {
		thinking = "with thinking (" + p.ThinkingReason + ")"
	}
	fmt.Fprintf(&b, "provider %s, model %s, %s %s call %s, ~%d tokens, %s\n", cmp.Or(p.Provider, "-"), cmp.Or(p.Model, "-"), mode, p.API, thinking, p.Tokens, where)
	switch {
	case p.Spent:
		fmt.Fprintf(&b, "run budget spent (0s remaining): the run is over; the proxy refuses its calls at once with the budget error (%s: %v), not a timeout; the layers below are what a call would get at the %s minimum cap\n",
			BudgetErrorCode, ErrBudgetSpent, Seconds(MinBudgetCap))
	case p.Budget > 0 && p.Remaining/2 < MinBudgetCap:
		fmt.Fprintf(&b, "run budget: %s remaining; implicit stale timeouts are capped at %s, the minimum cap (half the remaining budget is %s)\n",
			Seconds(p.Remaining), Seconds(p.Budget), Seconds(p.Remaining/2))
	case p.Budget > 0:
		fmt.Fprintf(&b, "run budget: %s remaining; implicit stale timeouts are capped at half of it, %s\n", Seconds(p.Remaining), Seconds(p.Budget))
	}
	if p.GiveUp > 0 {
		fmt.Fprintf(&b, "give-up breaker: %s, one per call however often its client retries it, in two streaks: of the model (a model change resets it) and of the provider across models (it does not)\n\n", p.GiveUpSource)
	} else {
		fmt.Fprintf(&b, "give-up breaker: %s (both the model and the provider streak)\n\n", p.GiveUpSource)
	}
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "LAYER\tVALUE\tUSED\tCHAIN")
	for _, v := range p.layers {
		used := "yes"
		if !v.Applies {
			used = "no"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", v.Layer.Title(), Seconds(v.Timeout), used, v.ChainString())
	}
	w.Flush()
	for _, s := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", s)
	}
	return b.String()
}

// Seconds formats d the way the config files speak: "180s", or "1.5s" for
// fractions.
func Seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%gs", d.Seconds())
}
