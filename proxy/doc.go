// Package proxy is hermesd's OpenAI-compatible provider proxy (SPEC §10):
// an HTTP endpoint on loopback that routes /v1/chat/completions,
// /v1/responses and /v1/models to the configured LLM providers and enforces
// the timeout stack of package timeouts on real traffic. /v1/models adds
// to the configured models what each provider's own GET /models lists,
// asked in the background when Serve starts and on reload (models.go).
//
// Every call is resolved once with timeouts.Resolve (through
// providers.Set.Plan's inputs) and watched layer by layer:
//
//   - socket read: the time between chunks of bytes from the provider,
//     connection included;
//   - stale stream: the time between content events. SSE comments and
//     keep-alive events without content do not reset it; content, reasoning
//     and tool-call deltas do;
//   - first event (Responses API streams): accepted, no event yet;
//   - stale non-stream: a non-streaming call whose answer never starts;
//   - API call: a whole non-streaming call;
//   - post-terminal drain: after [DONE] or response.completed, the
//     client's response ends at once; the proxy then waits, on its own, at
//     most the drain for the provider to close, and closes it after.
//
// A cut names the layer, its value, its provenance chain and the setting to
// change: as an OpenAI-style JSON error (HTTP 504) before the provider's
// stream started (its response headers, which are relayed at once so that a
// client sees the stream open while the model thinks), as an SSE "error"
// event after; a cut before the stream started says x-should-retry: false.
// A give-up breaker per session (X-Hermes-Session, else the run, else a
// hash of the client's bearer token; see sessionKey) fails calls at once
// after repeated stale kills, counting each call once however often its
// SDK retries it, per model and per provider across models. Requests of a registered
// run (path prefix /run/<id>/v1 or header X-Hermes-Run-Id) are resolved with
// that run's remaining budget and get its wrap-up notice once; at its
// deadline its calls in flight are ended, and once it has ended it is
// remembered for RunMemory (runs.go).
//
// The proxy lends the owner's provider keys to the owner only (guard.go):
// every request must present the proxy token (token.go) as its API key,
// address the proxy by a loopback Host, and carry no Origin that
// gateway.allowed_origins does not list. What clients can make it hold is
// bounded (limits.go): connections (503 over the cap, fitted to the
// descriptor limit; those that have not presented the token at most a
// quarter of it, closed early), request body bytes in flight across requests, and
// the time a request's headers and body, or an idle connection, may take.
//
// Streaming calls go upstream through a small client of this package (see
// streamClient): HTTP/2 to a TLS provider that takes h2, many streams on
// one connection, and otherwise HTTP/1.1 read in the handler's own
// goroutine; non-streaming calls, and any call the environment routes
// through an HTTP proxy, go through net/http's Transport. An idle relayed
// stream thus holds one handler goroutine with a small stack, the server's
// connection reader, a few kilobytes of buffers, and over HTTP/2 a stream
// of a shared connection (net/http's goroutine for it) instead of a
// connection of its own. A timeout layer that cuts a stream resets that
// stream alone.
package proxy
