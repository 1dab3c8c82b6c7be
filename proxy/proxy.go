package proxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// shutdownGrace bounds how long Serve waits for handlers after cutting
// their calls.
const shutdownGrace = 5 * time.Second

// Options configure a Proxy. Providers is required; zero values elsewhere
// take the defaults named.
type Options struct {
	// Providers routes models and builds each call's timeout inputs.
	// SetProviders replaces it on reload.
	Providers *providers.Set
	// Listen is the address Listen binds (gateway.listen); "" means
	// units.DefaultListen.
	Listen string
	// AllowNonLoopback lets Listen and Serve use a non-loopback address.
	// The proxy injects API keys: exposing it to a network hands the keys
	// to anyone who can reach it.
	AllowNonLoopback bool
	// Env looks up API key variables and the timeout knobs
	// (HERMES_STREAM_STALE_TIMEOUT, HERMES_STREAM_STALE_GIVEUP). Nil is an
	// empty environment; hermesd passes os.LookupEnv.
	Env func(string) (string, bool)
	// Now is the clock of breakers; nil is time.Now.
	Now func() time.Time
	// ProbeInterval is the breakers' half-open probe interval; 0 is
	// timeouts.DefaultProbeInterval.
	ProbeInterval time.Duration
	// Scale multiplies every resolved timeout before it is armed, and is
	// named in cut errors. For tests only, where 180 s of silence must take
	// 180 ms; 0 means 1.
	Scale float64
	// Logf reports what no client sees (a failed write to a gone client,
	// a refused request); nil discards.
	Logf func(format string, args ...any)
	// Report is told about every model call once it has ended (report.go),
	// on the call's handler goroutine; it must not block. nil: not told.
	Report func(Report)
	// Token is the proxy token clients must present as their API key
	// (see guard and LoadToken); required. SetToken replaces it.
	Token string
	// AllowedOrigins are the browser origins (scheme://host[:port],
	// lower case, as units decodes gateway.allowed_origins) whose requests
	// are served; a request with any other Origin is refused.
	AllowedOrigins []string
	// Limits bound connections, bodies and their timeouts; zero fields
	// take the defaults of package units.
	Limits Limits
	// FDLimit is the descriptor limit Limits.MaxConns is fitted to; 0
	// reads the soft RLIMIT_NOFILE when New runs.
	FDLimit uint64
}

// Proxy is the provider proxy. Create it with New, serve it with Serve (or
// mount it as an http.Handler); its methods are safe for concurrent use.
type Proxy struct {
	opts      Options
	set       atomic.Pointer[providers.Set]
	transport *http.Transport
	client    *http.Client // non-streaming calls, and calls through an HTTP proxy
	stream    streamClient // streaming calls
	sessions  sessions
	tokens    tokens
	conns     connCap
	bodies    *bodyBudget

	mu    sync.Mutex
	runs  map[string]*run // guarded by mu
	ended endedRuns       // guarded by mu

	// The providers' own model lists (models.go); modelsTimeout bounds
	// one provider's answer (tests shorten it).
	catalog       catalog
	modelsTimeout time.Duration

	// Drains of streams whose client was released at the terminal event
	// (drainUpstream); Serve ends them with endDrains.
	drainMu      sync.Mutex
	drainCancels map[*watchdog]context.CancelCauseFunc // guarded by drainMu
	drainClosed  bool                                  // guarded by drainMu
	drainWG      sync.WaitGroup
}

// New returns a Proxy for opts. It fails when opts.Providers is nil or
// opts.Token empty. A set with no provider is valid (every model request
// then fails with an unknown model error); hermesd leaves the proxy off in
// that case. A Limits.MaxConns over what the descriptor limit allows
// (ReservedFDs, FDsPerConn) is lowered, and the change logged.
func New(opts Options) (*Proxy, error) {
	if opts.Providers == nil {
		return nil, errors.New("proxy: Options.Providers is nil: build it with providers.New")
	}
	if opts.Token == "" {
		return nil, errors.New("proxy: Options.Token is empty: every client must present a token; read it with LoadToken")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Scale == 0 {
		opts.Scale = 1
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	opts.Limits.fill()
	if opts.FDLimit == 0 {
		opts.FDLimit = nofile()
	}
	if fit := fitConns(opts.FDLimit); opts.Limits.MaxConns > fit {
		opts.Logf("proxy: gateway.max_connections lowered from %d to %d: the descriptor limit (RLIMIT_NOFILE %d) must keep %d for the rest of hermesd; raise the limit (ulimit -n, LimitNOFILE=) to allow more",
			opts.Limits.MaxConns, fit, opts.FDLimit, ReservedFDs)
		opts.Limits.MaxConns = fit
	}
	p := &Proxy{opts: opts, runs: map[string]*run{}, ended: endedRuns{m: map[string]endedRun{}}, bodies: newBodyBudget(opts.Limits.MaxInFlight), drainCancels: map[*watchdog]context.CancelCauseFunc{},
		modelsTimeout: defaultModelsTimeout}
	p.conns = connCap{max: opts.Limits.MaxConns, logf: opts.Logf}
	p.tokens.set(opts.Token, 0, opts.Now())
	p.set.Store(opts.Providers)
	p.sessions = sessions{now: opts.Now, interval: opts.ProbeInterval, m: map[string]*session{}}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	p.transport = &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        maxIdleTotal,
		MaxIdleConnsPerHost: maxIdlePerHost,
		IdleConnTimeout:     90 * time.Second,
		// Compressed streams would hide the event boundaries the watchdog
		// reads, and delay bytes behind the decompressor's buffer.
		DisableCompression: true,
		// An idle stream holds its connection's buffers: the request is
		// written once (a large body bypasses the buffer), and the SSE
		// reader keeps its own buffer, so small ones cost nothing in speed
		// and keep 1000 idle streams small.
		WriteBufferSize: 512,
		ReadBufferSize:  2048,
	}
	p.stream.dial = dialer.DialContext
	p.client = &http.Client{
		Transport: p.transport,
		// A redirect would resend the injected API key elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p, nil
}

// SetProviders replaces the provider set (on a config reload). Calls in
// flight keep the plan they started with. While Serve runs, the providers'
// own model lists are asked for again (models.go), in the background.
func (p *Proxy) SetProviders(s *providers.Set) {
	p.catalog.mu.Lock()
	defer p.catalog.mu.Unlock()
	p.set.Store(s)
	p.listModelsLocked(s)
}

// Status returns every session's give-up breaker, sorted by session key.
func (p *Proxy) Status() []BreakerStatus { return p.sessions.status() }

// CheckLoopback returns an error wrapping ErrNotLoopback unless addr's host
// is a loopback IP or "localhost".
func CheckLoopback(addr string) error {
	return units.CheckListen("proxy: listen address", addr, false, ErrNotLoopback,
		"the proxy injects provider API keys, so it listens on loopback only (127.0.0.1:7411 by default): change gateway.listen, or allow other addresses explicitly")
}

// Listen binds Options.Listen (default 127.0.0.1:7411), refusing a
// non-loopback address unless Options.AllowNonLoopback.
func (p *Proxy) Listen(ctx context.Context) (net.Listener, error) {
	addr := p.opts.Listen
	if addr == "" {
		addr = units.DefaultListen
	}
	if !p.opts.AllowNonLoopback {
		if err := CheckLoopback(addr); err != nil {
			return nil, err
		}
	}
	return units.ListenTCP(ctx, "proxy", "gateway.listen", addr)
}

// Serve serves the proxy on ln until ctx ends, then cuts the calls in
// flight (streams get an SSE error event saying hermesd is shutting down),
// waits for their handlers (at most 5 s), closes ln and idle upstream
// connections, and returns nil. While it serves, it keeps the providers'
// own model lists (models.go): asked for when it starts and on each
// SetProviders, on goroutines it ends and waits for before it returns. It returns earlier with the error if ln
// fails. ln must be loopback unless Options.AllowNonLoopback.
//
// Connections over Limits.MaxConns are answered 503 and closed, and those
// that have not presented the token hold at most a quarter of them (see
// connCap); a connection's request headers must arrive within
// ReadHeaderTimeout, its body within BodyReadTimeout, and a kept-alive
// connection is closed after IdleTimeout without a request.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	if !p.opts.AllowNonLoopback {
		if err := CheckLoopback(ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	base, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	lim := p.opts.Limits
	srv := &http.Server{
		Handler:           p,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		ErrorLog:          log.New(logWriter{p.opts.Logf}, "proxy: ", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if cc, ok := c.(*capConn); ok {
				return context.WithValue(ctx, connKey{}, cc)
			}
			return ctx
		},
	}
	// The listing of the providers' models begins before the first
	// request can come: one that came before it found no listing and
	// answered the configured models alone.
	p.startCatalog(base)
	defer p.stopCatalog()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(capListener{Listener: ln, c: &p.conns}) }()
	defer p.transport.CloseIdleConnections()
	defer p.stream.closeIdle()
	defer p.endDrains()
	select {
	case err := <-errc:
		return fmt.Errorf("proxy: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	stop(ErrShuttingDown)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

type logWriter struct{ logf func(string, ...any) }

func (w logWriter) Write(b []byte) (int, error) {
	w.logf("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// ServeHTTP admits the request (guard: Host, Origin, token), then routes
// /v1/... and /run/<id>/v1/....
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.guard(w, r) {
		return
	}
	p.promote(r)
	path, runID := r.URL.Path, r.Header.Get(HeaderRunID)
	// The run id is cut from the escaped path, so that an id holding an
	// escaped "/" stays one segment.
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/run/"); ok {
		id, tail, _ := strings.Cut(rest, "/")
		uid, err1 := url.PathUnescape(id)
		utail, err2 := url.PathUnescape(tail)
		if err1 != nil || err2 != nil {
			writeError(w, badRequest(http.StatusBadRequest, "bad_path", "malformed path "+r.URL.EscapedPath(), ""))
			return
		}
		runID, path = uid, "/"+utail
	}
	var api timeouts.API
	switch path {
	case "/v1/models":
		if r.Method != http.MethodGet {
			writeError(w, badRequest(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" /v1/models", "use GET /v1/models"))
			return
		}
		p.models(w, r)
		return
	case "/v1/chat/completions":
		api = timeouts.Chat
	case "/v1/responses":
		api = timeouts.Responses
	default:
		writeError(w, badRequest(http.StatusNotFound, "unknown_url", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path),
			"it serves POST /v1/chat/completions, POST /v1/responses and GET /v1/models (also under /run/<id>/v1)"))
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, badRequest(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" "+path, "use POST "+path))
		return
	}
	p.call(w, r, api, runID)
}

// RunBaseURL is the OPENAI_BASE_URL a job of run runID gets from the proxy
// whose base URL is base ("http://127.0.0.1:7411"): BASE/run/RUNID/v1, so
// that a plain OpenAI-compatible client needs no extra header.
func RunBaseURL(base, runID string) string {
	return strings.TrimRight(base, "/") + "/run/" + url.PathEscape(runID) + "/v1"
}
