package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"go.uber.org/goleak"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scale runs the resolved timeouts at 1/1000: the 180 s stale default is
// 180 ms, socket read and first event 120 ms, a 600 s floor 600 ms. The
// scripted upstream's keep-alives come every tick, well inside all of them.
const (
	scale = 0.003
	tick  = 20 * time.Millisecond
)

// script plays one upstream answer. It returns when done or when the
// proxy hangs up (r.Context() ends).
type script func(w http.ResponseWriter, r *http.Request, body map[string]any)

// upstream is the scripted provider: an httptest server on loopback whose
// behaviour the test swaps between calls. It records what it received and
// reports, per request, when its handler has returned, so that a test can
// wait for the proxy to have hung up. GET …/models, which the proxy sends
// on its own (models.go), is answered by list instead, and counted apart
// in listCalls: calls, bodies and exited are the model calls only.
type upstream struct {
	srv       *httptest.Server
	script    atomic.Pointer[script]
	calls     atomic.Int32
	list      atomic.Pointer[http.HandlerFunc]
	listCalls atomic.Int32

	mu     sync.Mutex
	bodies []map[string]any // guarded by mu
	auth   []string         // guarded by mu
	exited chan struct{}    // one value per handler return
}

func newUpstream(t *testing.T, useTLS, h2 bool) *upstream {
	t.Helper()
	u := &upstream{exited: make(chan struct{}, 64)}
	u.listModels(emptyList)
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			u.listCalls.Add(1)
			(*u.list.Load())(w, r)
			return
		}
		defer func() { u.exited <- struct{}{} }()
		u.calls.Add(1)
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		(*u.script.Load())(w, r, body)
	}))
	if useTLS {
		u.srv.EnableHTTP2 = h2
		u.srv.StartTLS()
	} else {
		u.srv.Start()
	}
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) play(s script) { u.script.Store(&s) }

// listModels makes h the answer to GET …/models.
func (u *upstream) listModels(h http.HandlerFunc) { u.list.Store(&h) }

// emptyList is a provider's model list with no model.
func emptyList(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"object":"list","data":[]}`)
}

func (u *upstream) last() (map[string]any, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[len(u.bodies)-1], u.auth[len(u.auth)-1]
}

// waitExit waits for n upstream handlers to return: the proxy closed their
// connections (a handler blocked on r.Context() only returns then).
func (u *upstream) waitExit(t *testing.T, n int) {
	t.Helper()
	for range n {
		testkit.Receive(t, 10*time.Second, u.exited, "the upstream handler is still running: the proxy did not close the upstream connection")
	}
}

// harness is a proxy serving on loopback in front of an upstream, and an
// openai-go client pointed at it.
type harness struct {
	stop  func() error // ends Serve and returns its error (once)
	up    *upstream
	proxy *Proxy
	url   string // http://127.0.0.1:port
	hc    *http.Client
}

type setup struct {
	models map[string]units.ProviderModel
	stale  time.Duration
	agent  units.Agent
	env    map[string]string
	// tls serves the upstream over HTTPS (base URL https://...); h2 has
	// it offer HTTP/2 besides HTTP/1.1, as cloud providers do.
	tls, h2 bool
	// report is Options.Report.
	report func(Report)
	// scale replaces the default time scale: a test whose upstream must
	// keep bytes flowing inside the socket read timeout on a loaded machine
	// takes a larger one.
	scale float64
	// origins, limits, fdLimit, logf and now are the proxy's
	// Options.AllowedOrigins, Limits, FDLimit, Logf and Now.
	origins []string
	limits  Limits
	fdLimit uint64
	logf    func(string, ...any)
	now     func() time.Time
	// list answers the upstream's GET …/models from the start (the
	// proxy asks as Serve starts); nil: an empty list. modelsTimeout
	// replaces the proxy's bound on that answer.
	list          http.HandlerFunc
	modelsTimeout time.Duration
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	up := newUpstream(t, s.tls, s.h2)
	if s.list != nil {
		up.listModels(s.list)
	}
	if s.models == nil {
		s.models = map[string]units.ProviderModel{"gpt-4o": {}, "gpt-4o-mini": {}, "o3": {}}
	}
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	cfg := &units.Config{
		Agent: s.agent,
		Providers: map[string]units.Provider{
			// A cloud-looking name: loopback would get the local ceilings.
			"openai": {BaseURL: scheme + "://api.openai.test/v1", APIKeyEnv: "OPENAI_API_KEY", Models: s.models, StaleTimeout: s.stale},
		},
	}
	set, err := providers.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "upstream-key"}
	for k, v := range s.env {
		env[k] = v
	}
	p, err := New(Options{
		Token:     testToken,
		Providers: set,
		Env:       func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Report:    s.report,
		Scale:     cmp.Or(s.scale, scale),

		AllowedOrigins: s.origins,
		Limits:         s.limits,
		FDLimit:        s.fdLimit,
		Logf:           s.logf,
		Now:            s.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The configured base URL is a cloud name (so the resolver applies cloud
	// defaults); the transport dials the scripted upstream instead.
	p.transport.Proxy = nil
	upAddr := up.srv.Listener.Addr().String()
	p.transport.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, upAddr)
	}
	p.stream.dial = p.transport.DialContext
	if s.modelsTimeout > 0 {
		p.modelsTimeout = s.modelsTimeout
	}
	if s.tls {
		// The test certificate names example.com, not the configured host.
		cfg := up.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		cfg.ServerName = "example.com"
		// One each: the Transport changes its own on first use (its HTTP/2
		// setup), which the stream client's Clone would race with.
		p.stream.tls, p.transport.TLSClientConfig = cfg, cfg.Clone()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	tr := &http.Transport{}
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: got %v, want nil", err)
		}
		tr.CloseIdleConnections()
	})
	return &harness{stop: stop, up: up, proxy: p, url: "http://" + ln.Addr().String(), hc: &http.Client{Transport: bearer{tr}}}
}

// testToken is the harness proxy's token.
const testToken = "hermes-TESTTOKEN0123456789"

// bearer presents testToken on requests that carry no Authorization.
type bearer struct{ rt http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+testToken)
	}
	return b.rt.RoundTrip(r)
}

// client returns an openai-go client for base (a path under the proxy, like
// "/v1/" or "/run/job/v1/"), without retries so that every call is one call.
func (h *harness) client(base string, opts ...option.RequestOption) openai.Client {
	opts = append([]option.RequestOption{
		option.WithBaseURL(h.url + base),
		option.WithAPIKey(testToken),
		option.WithMaxRetries(0),
		option.WithHTTPClient(h.hc),
	}, opts...)
	return openai.NewClient(opts...)
}

func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
}

// stream runs a streaming chat call and returns the content and reasoning
// it assembled and the stream's error.
func stream(t *testing.T, c openai.Client, model string) (string, error) {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(t.Context(), chatParams(model))
	defer s.Close()
	text := ""
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text += ch.Delta.Content
		}
	}
	return text, s.Err()
}

// errMessage is the message a client shows for err: the API error's
// message, or the stream error's.
// says fails t for every string of want that msg, a client's error
// message, does not hold.
func says(t *testing.T, msg string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(msg, s) {
			t.Errorf("client error %q does not say %q", msg, s)
		}
	}
}

func errMessage(t *testing.T, err error) string {
	t.Helper()
	var api *openai.Error
	if errors.As(err, &api) {
		return api.Message
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return se.Message
	}
	if err == nil {
		t.Fatal("got no error, want one")
	}
	return err.Error()
}

// SSE helpers for scripts.

func sseStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func send(w http.ResponseWriter, s string) {
	io.WriteString(w, s)
	w.(http.Flusher).Flush()
}

func chunk(field, text string) string {
	return fmt.Sprintf("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{%q:%q},\"finish_reason\":null}]}\n\n", field, text)
}

const finish = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"

// every calls fn each tick until d has passed (d < 0: until the proxy
// hangs up). It reports false when the proxy hung up.
func every(r *http.Request, d time.Duration, fn func()) bool {
	t := time.NewTicker(tick)
	defer t.Stop()
	var end <-chan time.Time
	if d >= 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		end = tm.C
	}
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-end:
			return true
		case <-t.C:
			fn()
		}
	}
}

// think streams keep-alive comments for d (the model thinks, no content),
// then answers "hello" and [DONE].
func think(d time.Duration) script {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		sseStart(w)
		if !every(r, d, func() { send(w, ": ping\n\n") }) {
			return
		}
		send(w, chunk("content", "hel")+chunk("content", "lo")+finish+"data: [DONE]\n\n")
	}
}

// keepAlives sends content-free events until the proxy hangs up: comments,
// and role-only and empty-content chunks.
func keepAlives(w http.ResponseWriter, r *http.Request, _ map[string]any) {
	sseStart(w)
	send(w, chunk("role", "assistant"))
	i := 0
	every(r, -1, func() {
		i++
		if i%2 == 0 {
			send(w, ": keep-alive\n\n")
		} else {
			send(w, chunk("content", ""))
		}
	})
}

// reasoning streams reasoning deltas for d, then content.
func reasoning(field string, d time.Duration) script {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		sseStart(w)
		if !every(r, d, func() { send(w, chunk(field, "hmm ")) }) {
			return
		}
		send(w, chunk("content", "answer")+finish+"data: [DONE]\n\n")
	}
}

// answer answers at once, streaming or not.
func answer(w http.ResponseWriter, r *http.Request, body map[string]any) {
	if s, _ := body["stream"].(bool); s {
		think(0)(w, r, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
}

// neverClose answers, sends [DONE], and keeps the connection open.
func neverClose(w http.ResponseWriter, r *http.Request, _ map[string]any) {
	sseStart(w)
	send(w, chunk("content", "hello")+finish+"data: [DONE]\n\n")
	<-r.Context().Done()
}

// hang accepts the call and never answers.
func hang(_ http.ResponseWriter, r *http.Request, _ map[string]any) { <-r.Context().Done() }

// noFirstEvent accepts a Responses stream and sends only comments.
func noFirstEvent(w http.ResponseWriter, r *http.Request, _ map[string]any) {
	sseStart(w)
	every(r, -1, func() { send(w, ": ping\n\n") })
}

var _ = timeouts.StaleStream

func mustSet(t *testing.T) *providers.Set {
	t.Helper()
	s, err := providers.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testOptions are the options of a proxy with no provider.
func testOptions(t *testing.T) Options {
	t.Helper()
	return Options{Providers: mustSet(t), Token: testToken}
}
