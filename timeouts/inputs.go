package timeouts

import (
	"errors"
	"time"
	"unicode/utf8"
)

var (
	// ErrInvalid is wrapped by every parse error of this package.
	ErrInvalid = errors.New("invalid value")
	// ErrBudgetSpent: the calling run has spent its whole budget; its
	// calls are refused with this error instead of waiting out a timeout.
	ErrBudgetSpent = errors.New("the run's budget is spent")
)

// BudgetErrorCode is the error code a client gets for ErrBudgetSpent (the
// provider proxy's OpenAI-style error), named here so that explain and the
// proxy say the same.
const BudgetErrorCode = "run_budget_exceeded"

// Defaults of SPEC §10's table. Every value is finite: a detector that never
// fires is how a stuck local server hung a run forever.
const (
	DefaultSocketRead     = 120 * time.Second
	DefaultStaleStream    = 180 * time.Second
	DefaultStaleNonStream = 90 * time.Second
	DefaultFirstEvent     = 120 * time.Second
	DefaultAPICall        = 1800 * time.Second
	DefaultDrain          = 2 * time.Second

	// Local endpoint ceilings, used at implicit defaults.
	LocalSocketRead  = 1800 * time.Second
	LocalStaleStream = 900 * time.Second // agent.local_stream_stale_timeout
	LocalFirstEvent  = 900 * time.Second

	// MinBudgetCap is the floor of the run-budget cap: a call always gets at
	// least a minute, even with less than two minutes of budget left.
	MinBudgetCap = 60 * time.Second

	// MaxTimeout bounds every value, explicit ones included, so that no
	// layer is ever effectively infinite. A value above it is clamped, with
	// a step in the chain saying so.
	MaxTimeout = 24 * time.Hour

	// DefaultGiveUp is the breaker threshold when HERMES_STREAM_STALE_GIVEUP
	// is unset.
	DefaultGiveUp = 5
)

// Environment knobs read by Resolve, always through Inputs.Env.
const (
	// EnvStaleTimeout is the user's own stale-stream deadline, in seconds
	// ("150", "150.5") or as a Go duration ("2m30s"). It is honoured as is:
	// never scaled, floored nor capped by the run budget or the hard cap.
	EnvStaleTimeout = "HERMES_STREAM_STALE_TIMEOUT"
	// EnvGiveUp is the breaker threshold: consecutive stale kills before
	// calls fail at once. 0 disables the breaker.
	EnvGiveUp = "HERMES_STREAM_STALE_GIVEUP"
)

// Inputs is everything Resolve looks at. The zero value is a streaming-off
// chat call to a cloud provider with no configuration: every layer at its
// default.
type Inputs struct {
	Provider Provider
	Model    string // as the client sent it, "openai/o3" or "o3"
	Stream   bool
	API      API
	Tokens   int // estimated context tokens, see EstimateTokens
	// Thinking: the request enables thinking (Anthropic-style thinking,
	// OpenAI reasoning_effort or reasoning). A model id naming a thinking
	// variant (ThinkingModel) makes a thinking call too. Floors whose
	// condition is ThinkingOnly cover thinking calls only.
	Thinking bool
	Run      RunBudget
	Agent    Agent
	// Env looks up environment knobs (EnvStaleTimeout, EnvGiveUp). Nil
	// means an empty environment; pass os.LookupEnv at the edge.
	Env func(key string) (string, bool)
}

// Provider is one LLM endpoint's settings, as configured under
// providers.<id> in hermes.yaml or in a unit's provider: block.
type Provider struct {
	ID      string
	BaseURL string
	// Source names where this block lives, for provenance chains:
	// "providers.openai" (the default when empty, built from ID) or
	// "units/llama.yaml provider".
	Source string
	// StaleTimeout is providers.<id>.stale_timeout_seconds; 0 is implicit.
	StaleTimeout time.Duration
	// Models holds per-model settings keyed by model id as configured.
	Models map[string]Model
	// Tiers, when non-empty, replace the default context tiers on both the
	// streaming and the non-streaming path.
	Tiers []Tier
	// Floors extend the built-in model floor table; a slug that is already
	// in the table takes the configured value.
	Floors []Floor
}

// Model holds per-model settings of a provider.
type Model struct {
	// StaleTimeout is providers.<id>.models.<model>.stale_timeout_seconds;
	// 0 is implicit. It beats the provider's own StaleTimeout.
	StaleTimeout time.Duration
}

// Tier raises implicit stale timeouts to at least Timeout when the estimated
// context is strictly above AboveTokens.
type Tier struct {
	AboveTokens int
	Timeout     time.Duration
}

// Floor gives calls to models whose name matches Slug at least Timeout of
// stale patience, when When covers the call; see MatchFloor for the
// matching rule.
type Floor struct {
	Slug    string        `json:"slug"`
	Timeout time.Duration `json:"-"`
	When    Condition     `json:"when"`
	// Source says where a built-in entry comes from (the seed's row and
	// the report behind it); empty for a configured floor.
	Source string `json:"source,omitempty"`
}

// Agent holds the agent.* settings that shape timeouts. Zero fields take
// their defaults.
type Agent struct {
	LocalStreamStaleTimeout time.Duration // default LocalStaleStream
	StaleTimeoutHardCap     time.Duration // 0: no hard cap
	StreamDrainTimeout      time.Duration // default DefaultDrain
}

// RunBudget is a run's budget as seen when a call starts. A zero Total means
// the run has no budget. Budget.Run takes this snapshot from a live clock.
type RunBudget struct {
	Total time.Duration
	Spent time.Duration
}

// Remaining is Total minus Spent, never negative.
func (r RunBudget) Remaining() time.Duration {
	if r.Spent >= r.Total {
		return 0
	}
	return r.Total - r.Spent
}

// Exhausted reports whether the run has a budget and has spent all of it.
// Such a run's calls are refused with ErrBudgetSpent, not timed out: a
// call would only stretch a run that is over past its deadline.
func (r RunBudget) Exhausted() bool { return r.Total > 0 && r.Spent >= r.Total }

// Left is the budget of a run with d left when its total is not known
// (`hermesctl timeouts explain --budget-remaining`): d with nothing spent,
// or, for d ≤ 0, a budget that is spent.
func Left(d time.Duration) RunBudget {
	if d <= 0 {
		return RunBudget{Total: time.Nanosecond, Spent: time.Nanosecond}
	}
	return RunBudget{Total: d}
}

// Limit is the run-budget cap for an implicit timeout: half the remaining
// budget, never under MinBudgetCap. ok is false when the run has no budget.
func (r RunBudget) Limit() (limit time.Duration, ok bool) {
	if r.Total <= 0 {
		return 0, false
	}
	return max(MinBudgetCap, r.Remaining()/2), true
}

// EstimateTokens estimates the context size of a request from the text of
// its messages and tools: characters / 4, rounded up.
func EstimateTokens(texts ...string) int {
	n := 0
	for _, s := range texts {
		n += utf8.RuneCountInString(s)
	}
	return (n + 3) / 4
}
