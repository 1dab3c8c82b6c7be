package proxy

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-units/hermes/timeouts"
)

var (
	// ErrCut is wrapped by every *CutError: a timeout layer cut the call.
	ErrCut = errors.New("call cut by a timeout")
	// ErrShuttingDown ends the calls in flight when Serve's context ends.
	ErrShuttingDown = errors.New("hermesd is shutting down")
	// ErrRunEnded ends the calls in flight of a run that UnregisterRun
	// removed.
	ErrRunEnded = errors.New("the run ended")
	// ErrNotLoopback: the listen address is not a loopback address.
	ErrNotLoopback = errors.New("proxy listen address is not loopback")

	// errDrained is the cause the drain timer cancels a finished stream
	// with: not an error for the client.
	errDrained = errors.New("post-terminal drain elapsed")
)

// CutError says which timeout layer cut a call, with what value, where the
// value came from and which setting to change. Its Error text is what the
// client receives.
type CutError struct {
	Layer    timeouts.Layer
	Value    timeouts.Value // the layer's resolved value and chain
	Provider string
	Model    string // as sent to the provider
	BaseURL  string
	// Connected is false when the socket read layer fired before a
	// connection to the provider was established.
	Connected bool
	// Setting names the config key a user raises for this layer, derived
	// from the value's provenance; see fix.
	Setting string
	// Scale is the time scale the proxy ran with (1 in production).
	Scale float64
}

// Unwrap returns ErrCut.
func (e *CutError) Unwrap() error { return ErrCut }

// Stale reports whether the cut counts as a stale kill for the give-up
// breaker: every layer that measures silence does; the API call total and
// the drain do not.
func (e *CutError) Stale() bool {
	switch e.Layer {
	case timeouts.SocketRead, timeouts.StaleStream, timeouts.StaleNonStream, timeouts.FirstEvent:
		return true
	}
	return false
}

// Code is the error code sent to the client: "hermes_" and the layer.
func (e *CutError) Code() string { return "hermes_" + e.Layer.String() + "_timeout" }

func (e *CutError) Error() string {
	d := timeouts.Seconds(e.Value.Timeout)
	var what string
	switch e.Layer {
	case timeouts.SocketRead:
		if !e.Connected {
			what = fmt.Sprintf("socket read timeout fired while connecting: no connection to provider %s within %s", e.Provider, d)
		} else {
			what = fmt.Sprintf("socket read timeout fired after %s with no bytes from provider %s", d, e.Provider)
		}
	case timeouts.StaleStream:
		what = fmt.Sprintf("stale stream timeout fired after %s of silence (no content; keep-alives do not count) from provider %s", d, e.Provider)
	case timeouts.StaleNonStream:
		what = fmt.Sprintf("stale non-stream timeout fired: provider %s did not start answering within %s", e.Provider, d)
	case timeouts.FirstEvent:
		what = fmt.Sprintf("first event timeout fired: provider %s accepted the stream but sent no event within %s", e.Provider, d)
	case timeouts.APICall:
		what = fmt.Sprintf("API call timeout fired: the call to provider %s took longer than %s", e.Provider, d)
	default:
		what = fmt.Sprintf("%s timeout fired after %s", e.Layer.Title(), d)
	}
	scaled := ""
	if e.Scale != 0 && e.Scale != 1 {
		scaled = fmt.Sprintf(", times scaled ×%g", e.Scale)
	}
	return fmt.Sprintf("%s, model %s (%s%s); %s", what, e.Model, e.Value.ChainString(), scaled, e.fix())
}

// fix is the "what to do" part, from the last step of the chain: the rule
// that decided the value is the one to change.
func (e *CutError) fix() string {
	last := timeouts.StepDefault
	if n := len(e.Value.Chain); n > 0 {
		last = e.Value.Chain[n-1].Kind
	}
	env := " or set " + timeouts.EnvStaleTimeout
	if e.Layer == timeouts.StaleNonStream || e.Layer == timeouts.APICall {
		env = ""
	}
	switch {
	case e.Layer == timeouts.SocketRead:
		return fmt.Sprintf("check that %s is reachable and answering; the socket read timeout is fixed (%s, %s for local endpoints): a provider that thinks silently must send keep-alives, and on non-streaming calls it follows %s",
			cmp.Or(e.BaseURL, "-"), timeouts.Seconds(timeouts.DefaultSocketRead), timeouts.Seconds(timeouts.LocalSocketRead), e.Setting)
	case last == timeouts.StepEnv:
		return "raise " + timeouts.EnvStaleTimeout + " (the user's own deadline, taken as is)"
	case last == timeouts.StepExplicit, last == timeouts.StepFollow:
		return "raise " + e.Setting + " (an explicit value is taken as is, never floored)"
	case last == timeouts.StepBudget:
		return "the run budget capped it at half the remaining time: give the job a larger run_budget_seconds, or set " + e.Setting + " explicitly"
	case last == timeouts.StepHardCap:
		return "raise agent.stale_timeout_hard_cap, or set " + e.Setting + " explicitly"
	case last == timeouts.StepLocal, last == timeouts.StepAgent:
		return "raise agent.local_stream_stale_timeout or " + e.Setting
	}
	if e.Layer == timeouts.APICall {
		return "stream the call, or raise " + e.Setting + " (the API call timeout covers it)"
	}
	return "raise " + e.Setting + env
}

// setting names the stale_timeout_seconds key for a model of a provider
// whose config block lives at source ("providers.openai", or "llama.yaml
// provider" for a unit's block).
func setting(source, modelKey string) string {
	key := "models." + modelKey + ".stale_timeout_seconds"
	if modelKey == "" {
		key = "stale_timeout_seconds"
	}
	if strings.HasPrefix(source, "providers.") {
		return source + "." + key
	}
	return key + " of " + source
}
