package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"github.com/hermes-units/hermes/internal/sse"
	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/timeouts"
)

// errBadBaseURL: a provider's base_url does not make a request URL.
var errBadBaseURL = errors.New("bad base_url")

// maxResponse bounds a non-streaming answer held in memory.
const maxResponse = 256 << 20

// call serves one model request: parse, route, resolve, breaker, wrap-up,
// forward, record. It runs on the request's handler goroutine, which owns
// the call's watchdog.
//
// Everything up to the relay (parsing, resolving, dialling, TLS, the
// stream's response headers) runs in begin, on a short-lived goroutine
// that call waits for: those need deep stacks, and a goroutine's stack
// keeps its largest size for as long as it is in use. The handler
// goroutine, which lives as long as the stream, then only ever holds the
// relay's frames, and an idle stream costs an 8 KB stack instead of 16.
func (p *Proxy) call(w http.ResponseWriter, r *http.Request, api timeouts.API, runID string) {
	began := time.Now()
	// The call's context follows the client's request, but is not its
	// child: after the terminal event the upstream outlives the handler
	// for its drain, and the request's context ends with the handler.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	unfollow := context.AfterFunc(r.Context(), func() { cancel(context.Cause(r.Context())) })
	handedOff := false
	defer func() {
		if !handedOff {
			unfollow()
			cancel(nil)
		}
	}()
	var c *begun
	onFreshStack(func() { c = p.begin(ctx, w, r, api, runID, &cancel) })
	if c == nil {
		return
	}
	c.wd.began, c.wd.unfollow = began, unfollow
	if c.run != nil {
		defer p.detach(c.run, &cancel)
	}
	outcome := c.outcome
	if c.body != nil {
		if c.stream {
			outcome = p.relayStream(ctx, r, w, c.body, c.wd, api)
		} else {
			outcome = p.relayWhole(ctx, r, w, c.resp, c.body, c.wd)
		}
	}
	c.wd.record(outcome)
	p.report(ctx, c.wd, outcome)
	// Released at the terminal event: the client's response ends when
	// this handler returns, and the upstream is drained on its own, unless
	// the client had gone before the terminal event (ctx is ending).
	if c.body != nil && c.wd.draining && c.wd.detached {
		handedOff = p.drainUpstream(cancel, c.body, c.wd)
	}
	if !handedOff {
		c.wd.stop()
		if c.body != nil {
			c.body.Close()
		}
	}
}

// drainUpstream reads what a provider sends after a stream's terminal
// event, dropping it, until the provider closes the stream (the connection
// then goes back to the pool) or the drain timer, armed by relayStream,
// cuts it (the connection is closed). It runs on a goroutine of its own,
// so that the client is not held for the drain, tracked in p.drains:
// Serve ends and waits for the drains in flight when it returns. It
// reports false, and does nothing, when Serve has returned already.
func (p *Proxy) drainUpstream(cancel context.CancelCauseFunc, b io.ReadCloser, wd *watchdog) bool {
	p.drainMu.Lock()
	defer p.drainMu.Unlock()
	if p.drainClosed {
		return false
	}
	p.drainCancels[wd] = cancel
	p.drainWG.Go(func() {
		_, _ = io.Copy(io.Discard, b)
		b.Close() // before the cancel: a stream read to its end is reused
		wd.stop()
		cancel(nil)
		p.drainMu.Lock()
		delete(p.drainCancels, wd)
		p.drainMu.Unlock()
	})
	return true
}

// endDrains cuts the drains in flight and waits for them; later streams
// close their upstream at the terminal event instead of draining it.
func (p *Proxy) endDrains() {
	p.drainMu.Lock()
	p.drainClosed = true
	for _, c := range p.drainCancels {
		c(ErrShuttingDown)
	}
	p.drainMu.Unlock()
	p.drainWG.Wait()
}

// onFreshStack runs fn on a new goroutine and waits for it to return; a
// panic in fn is raised again in the caller, as if fn had run there.
func onFreshStack(fn func()) {
	done := make(chan struct{})
	var perr any
	go func() {
		defer func() {
			perr = recover()
			close(done)
		}()
		fn()
	}()
	<-done
	if perr != nil {
		panic(perr)
	}
}

// begun is a call whose request went upstream.
type begun struct {
	run *run // nil unless the call is a registered run's, attached
	wd  *watchdog
	// resp and body are the provider's answer, nil when the call ended
	// before one (outcome says how; the client got its error).
	resp *http.Response
	body *body
	// stream: the answer is an event stream whose headers were relayed
	// and flushed; relayStream relays the rest.
	stream  bool
	outcome timeouts.Outcome
}

// begin prepares the call and sends it (see call). It returns nil when the
// call ended before reaching the breaker (the client got its error).
func (p *Proxy) begin(ctx context.Context, w http.ResponseWriter, r *http.Request, api timeouts.API, runID string, cancel *context.CancelCauseFunc) *begun {
	pc, err := p.prepare(w, r, api, runID, cancel)
	if err != nil {
		writeError(w, err)
		return nil
	}
	c := &begun{run: pc.run, wd: pc.wd}
	resp, err := p.send(ctx, w, r, pc.wd, pc.url, pc.key, pc.payload)
	pc.payload = nil
	pc.release()
	if errors.Is(err, errBadBaseURL) {
		writeError(w, newError(http.StatusInternalServerError, "hermes_config_error", "bad_base_url", err.Error(), ""))
		c.outcome = timeouts.Failed
		return c
	}
	if err != nil {
		c.outcome = p.fail(ctx, r, w, false, pc.wd, err)
		return c
	}
	c.resp, c.body = resp, &body{rc: resp.Body, w: pc.wd}
	if !pc.wd.plan.Stream || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return c
	}
	// The stream starts when the provider's does: a client waiting for
	// headers while the provider thinks would otherwise see nothing at all.
	c.stream = true
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if err := http.NewResponseController(w).Flush(); err != nil {
		c.body.Close()
		c.body, c.outcome = nil, timeouts.Failed
	}
	return c
}

// prepared is a call ready to be forwarded.
type prepared struct {
	run     *run // nil unless the call is a registered run's, attached
	wd      *watchdog
	url     string
	key     string
	payload []byte
	// release gives the request body's room in the body budget back; begin
	// calls it once the payload went upstream.
	release func()
}

// prepare parses, routes and resolves the request, asks the breaker and
// injects the wrap-up notice. Its error, an *apiError, is the client's
// answer (a run it attached is then detached again).
func (p *Proxy) prepare(w http.ResponseWriter, r *http.Request, api timeouts.API, runID string, cancel *context.CancelCauseFunc) (pc *prepared, err error) {
	raw, release, err := p.readBody(w, r)
	if err != nil {
		return nil, bodyError(err)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	req, err := parseRequest(raw)
	if err != nil {
		return nil, badRequest(http.StatusBadRequest, "bad_body", err.Error(), "")
	}
	set := p.set.Load()
	rt, err := set.Route(req.Model)
	if err != nil {
		return nil, badRequest(http.StatusNotFound, "model_not_found", err.Error(), "")
	}
	prov, err := set.Get(rt.Provider)
	if err != nil {
		return nil, badRequest(http.StatusNotFound, "model_not_found", err.Error(), "")
	}

	rn, err := p.attachRun(runID, cancel)
	if err != nil {
		return nil, err
	}
	if rn != nil {
		defer func() {
			if err != nil {
				p.detach(rn, cancel)
			}
		}()
	}
	in, key, err := p.inputs(set, rt.Provider, prov.BaseURL, providers.Call{Model: rt.Model, Stream: req.Stream, API: api, Tokens: req.tokens(), Thinking: req.thinking(), Env: p.opts.Env}, rn)
	if err != nil {
		return nil, err
	}
	plan := timeouts.Resolve(in)

	ss := p.sessions.get(sessionKey(r, runID, rt.Provider), plan.GiveUp)
	at := attempt(r, rt.Provider, rt.Model)
	if err := ss.allow(at, r.Header.Get(HeaderTurn), p.opts.Now()); err != nil {
		p.reportGaveUp(ss, rt.Provider, rt.Model, req.Stream)
		return nil, newError(http.StatusServiceUnavailable, "hermes_gave_up", "stale_giveup", err.Error(), "").final()
	}
	if rn != nil && rn.budget != nil && rn.wrapup != "" && rn.budget.TakeWrapUp() {
		if err := req.wrapUp(api, rn.wrapup); err != nil {
			ss.breaker.Record(at, timeouts.Failed)
			return nil, badRequest(http.StatusBadRequest, "bad_body", err.Error(), "")
		}
	}
	req.setModel(rt.Model)

	wd := &watchdog{cut: *cancel, breaker: ss.breaker, attempt: at, ss: ss, plan: plan, scale: p.opts.Scale, template: CutError{
		Provider: rt.Provider, Model: rt.Model, BaseURL: prov.BaseURL, Scale: p.opts.Scale,
		Setting: staleSetting(in.Provider, rt.Model),
	}}
	url := strings.TrimRight(prov.BaseURL, "/") + "/chat/completions"
	if api == timeouts.Responses {
		url = strings.TrimRight(prov.BaseURL, "/") + "/responses"
	}
	return &prepared{run: rn, wd: wd, url: url, key: key, payload: req.body(), release: release}, nil
}

// attachRun attaches the call to its run, runID (none when empty): a run
// that is not registered, or whose budget is spent, refuses it.
func (p *Proxy) attachRun(runID string, cancel *context.CancelCauseFunc) (*run, error) {
	if runID == "" {
		return nil, nil
	}
	rn, ok := p.attach(runID, cancel)
	if !ok {
		return nil, p.refusedRun(runID)
	}
	if rn.budget != nil && rn.budget.Run().Exhausted() {
		// A spent run is over (its job is being stopped): a call would
		// only stretch it past its deadline, so it is refused, not timed.
		p.detach(rn, cancel)
		return nil, budgetSpent(runID, rn.budget.Total(), rn.budget.Deadline(), "", "give the job a larger run_budget_seconds")
	}
	return rn, nil
}

// inputs are the resolver's inputs for call c to provider id at baseURL
// (of run rn, when not nil), and the provider's API key.
func (p *Proxy) inputs(set *providers.Set, id, baseURL string, c providers.Call, rn *run) (timeouts.Inputs, string, error) {
	if rn != nil && rn.budget != nil {
		c.Run = rn.budget.Run()
	}
	in, err := set.Inputs(id, c)
	if err != nil {
		return in, "", badRequest(http.StatusNotFound, "model_not_found", err.Error(), "")
	}
	key, err := set.APIKey(id, p.opts.Env)
	if err != nil {
		return in, "", newError(http.StatusInternalServerError, "hermes_config_error", "missing_api_key", err.Error(), "")
	}
	if baseURL == "" {
		return in, "", newError(http.StatusInternalServerError, "hermes_config_error", "missing_base_url",
			fmt.Sprintf("provider %s has no base_url", id), fmt.Sprintf("set %s.base_url", in.Provider.Source))
	}
	return in, key, nil
}

// staleSetting names the setting a user changes for this call's stale
// patience: the explicit one in force, else the model's key.
func staleSetting(p timeouts.Provider, model string) string {
	if p.Source == "" {
		p.Source = "providers." + p.ID // as the resolver names it
	}
	for k, m := range p.Models {
		if strings.EqualFold(k, model) {
			if m.StaleTimeout > 0 || p.StaleTimeout <= 0 {
				return setting(p.Source, k)
			}
		}
	}
	if p.StaleTimeout > 0 {
		return setting(p.Source, "")
	}
	return setting(p.Source, model)
}

// send sends the request upstream, arms the watchdog, and returns the
// provider's response once its headers are in. The caller closes the
// response body; the call's context, cancelled by the caller's defer,
// closes the upstream connection of any call not read to its end.
func (p *Proxy) send(ctx context.Context, w http.ResponseWriter, r *http.Request, wd *watchdog, url, key string, payload []byte) (*http.Response, error) {
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { wd.connected.Store(true) }}
	ureq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadBaseURL, err)
	}
	copyRequestHeaders(ureq.Header, r.Header)
	ureq.Header.Set("Content-Type", "application/json")
	if key != "" {
		ureq.Header.Set("Authorization", "Bearer "+key)
	}
	wd.arm(timeouts.SocketRead)
	if wd.plan.Stream {
		wd.arm(timeouts.StaleStream)
		if wd.plan.API == timeouts.Responses {
			wd.arm(timeouts.FirstEvent)
		}
	} else {
		wd.arm(timeouts.StaleNonStream)
		wd.arm(timeouts.APICall)
	}
	var resp *http.Response
	if p.streamed(ureq, wd.plan.Stream) {
		resp, err = p.stream.do(ctx, url, ureq.Header, payload, func() { wd.connected.Store(true) })
	} else {
		resp, err = p.client.Do(ureq)
	}
	if err != nil {
		return nil, err
	}
	wd.arm(timeouts.SocketRead) // the headers were bytes
	return resp, nil
}

// streamed reports whether a call goes through the stream client: a
// streaming call to a provider the environment names no HTTP proxy for.
// Other calls go through the Transport, whose connection goroutines are
// worth their cost only when they do not sit idle with a stream.
func (p *Proxy) streamed(ureq *http.Request, stream bool) bool {
	if !stream {
		return false
	}
	if p.transport.Proxy == nil {
		return true
	}
	u, err := p.transport.Proxy(ureq)
	return err == nil && u == nil
}

// relayWhole relays a non-streaming answer (or a provider's error answer
// to a streaming request) once it is complete.
func (p *Proxy) relayWhole(ctx context.Context, r *http.Request, w http.ResponseWriter, resp *http.Response, b io.Reader, wd *watchdog) timeouts.Outcome {
	data, err := io.ReadAll(io.LimitReader(b, maxResponse))
	if err != nil {
		return p.fail(ctx, r, w, false, wd, err)
	}
	wd.stop()
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if _, err := w.Write(data); err != nil {
		p.opts.Logf("proxy: writing the answer to %s: %v", r.RemoteAddr, err)
		return timeouts.Failed
	}
	if resp.StatusCode/100 == 2 {
		return timeouts.Completed
	}
	return timeouts.Failed
}

// relayStream relays the rest of an SSE answer whose headers were relayed
// and flushed, piece by piece, flushing whenever nothing more is buffered,
// and feeds the watchdog: a dispatched event ends the first-event wait,
// content re-arms the stale stream timer, the terminal event starts the
// drain. It runs on the handler goroutine for as long as the stream lasts,
// and returns as soon as the terminal event is relayed and flushed, with
// the watchdog draining: the client's response ends there, and call hands
// the upstream to a drain of its own (see drainUpstream).
func (p *Proxy) relayStream(ctx context.Context, r *http.Request, w http.ResponseWriter, b io.Reader, wd *watchdog, api timeouts.API) timeouts.Outcome {
	rc := http.NewResponseController(w)
	rd := sse.NewReader(b)
	done, finished := false, false
	for {
		pc, err := rd.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF) && finished:
				_ = rc.Flush()
				return timeouts.Completed
			case errors.Is(err, io.EOF):
				writeSSEError(w, newError(http.StatusBadGateway, "upstream_error", "stream_truncated",
					fmt.Sprintf("provider %s closed the stream before its terminal event", wd.template.Provider), "retry the call, and check the provider if it happens again"))
				_ = rc.Flush()
				return timeouts.Failed
			}
			return p.fail(ctx, r, w, true, wd, err)
		}
		if pc.Kind == sse.Event {
			wd.disarm(timeouts.FirstEvent)
			switch classify(api, pc) {
			case content:
				wd.contentSeen(time.Now())
				wd.arm(timeouts.StaleStream)
				if api == timeouts.Chat && !finished && hasValue(pc.Data, `"finish_reason"`) {
					finished = true
				}
			case terminal, failed:
				done = true
				// From here the call is the client's in full: a client
				// that hangs up once it has the terminal event (an SDK
				// that stops reading at [DONE]) no longer cuts the
				// upstream, which is drained instead.
				wd.detached = wd.unfollow != nil && wd.unfollow()
			}
		}
		if _, err := w.Write(pc.Raw); err != nil {
			p.opts.Logf("proxy: relaying to %s: %v", r.RemoteAddr, err)
			return timeouts.Failed
		}
		if done || rd.Buffered() == 0 {
			if err := rc.Flush(); err != nil {
				return timeouts.Failed
			}
		}
		if done {
			wd.stop()
			wd.draining = true
			wd.arm(timeouts.Drain)
			return timeouts.Completed
		}
	}
}

// fail reports a call that ended with err: a cut (504), shutdown (503), a
// run that ended, a provider unreachable or broken (502), or a client that
// went away (nothing to report). Before anything was relayed the client
// gets an OpenAI-style JSON error; after, an SSE error event.
func (p *Proxy) fail(ctx context.Context, r *http.Request, w http.ResponseWriter, started bool, wd *watchdog, err error) timeouts.Outcome {
	cause := context.Cause(ctx)
	var ce *CutError
	var e *apiError
	outcome := timeouts.Failed
	switch {
	case errors.As(cause, &ce):
		// A cut is final for this call: the SDK is told not to retry it
		// (an OpenAI SDK retries a 504 twice by default). A retry would
		// wait out the same timeout on the same silence: three stale
		// waits for one call if the provider is gone. If it is not, a
		// retry that succeeds after a cut is usually a model thinking
		// longer than its stale timeout (seed 004's advice), and the fix
		// is the patience the error names, not a hidden retry. The
		// caller sees the error and decides; an SDK that retries anyway
		// costs the breaker one strike per call (timeouts.Attempt).
		e = newError(http.StatusGatewayTimeout, "timeout_error", ce.Code(), ce.Error(), "").final()
		if ce.Stale() {
			outcome = timeouts.StaleKill
		}
	case errors.Is(cause, ErrShuttingDown):
		e = newError(http.StatusServiceUnavailable, "server_error", "hermes_shutting_down", ErrShuttingDown.Error(), "retry once it is back")
	case errors.Is(cause, timeouts.ErrBudgetSpent):
		e = newError(http.StatusGone, "hermes_budget_error", timeouts.BudgetErrorCode, cause.Error(),
			"this call is ended, not timed out; give the run a larger budget if it needs longer").final()
	case errors.Is(cause, ErrRunEnded):
		e = badRequest(http.StatusGone, "run_ended", ErrRunEnded.Error(), "its budget is spent or it was stopped")
	case r.Context().Err() != nil:
		return timeouts.Failed // the client went away: nobody to tell
	case errors.Is(err, sse.ErrTooLong):
		e = newError(http.StatusBadGateway, "upstream_error", "event_too_long",
			fmt.Sprintf("provider %s sent an SSE event over %d MiB", wd.template.Provider, sse.DefaultMaxEvent>>20), "check the provider")
	default:
		e = newError(http.StatusBadGateway, "upstream_error", "upstream_unreachable",
			fmt.Sprintf("provider %s at %s: %v", wd.template.Provider, wd.template.BaseURL, err), "check that it runs and that its base_url is right")
	}
	// The breaker hears of the call before the client does: a client that
	// reads the error and asks for the status sees the streak it caused.
	wd.record(outcome)
	if started {
		writeSSEError(w, e)
		_ = http.NewResponseController(w).Flush()
	} else {
		writeError(w, e)
	}
	return outcome
}

// Headers never forwarded upstream: the client's own credentials (the
// provider's key is injected instead), hop-by-hop headers, what the
// transport computes, and the proxy's own headers.
var dropRequest = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Api-Key": true, "X-Api-Key": true,
	"Host": true, "Content-Length": true, "Accept-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Proxy-Connection": true,
}

var dropResponse = map[string]bool{
	"Content-Length": true, "Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Proxy-Connection": true,
}

func copyRequestHeaders(dst, src http.Header) {
	for k, vs := range src {
		if dropRequest[k] || strings.HasPrefix(k, "X-Hermes-") {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if dropResponse[k] {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}
