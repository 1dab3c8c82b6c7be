// Package timeouts is the layered timeout stack for calls to LLM providers
// (SPEC §10): one pure resolver that gives every layer (socket read, stale
// stream, stale non-stream, first event, API call, post-terminal drain) a
// finite value and the chain of rules that produced it; the give-up
// breaker; and the run budget clock.
//
// Silence means different things at each layer, so each gets its own
// budget: a reasoning model thinking for four minutes is not a dead socket,
// and an unattended run must not outlive its own budget. Every path that
// waits calls Resolve with the same Inputs, so a scheduled job and a
// gateway call with the same request compute the same numbers.
//
// The package imports only the standard library: package providers turns
// hermes.yaml into Inputs.
package timeouts
