package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/reconciler"
	"github.com/hermes-units/hermes/units"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// jobEnv makes the test binary play a job unit (see playJob). It is
// dispatched from init, before TestMain, so that TestMain stays as it is.
const jobEnv = "HERMESD_TEST_JOB"

func init() {
	if kind := os.Getenv(jobEnv); kind != "" {
		os.Exit(playJob(kind))
	}
}

// playJob is a job's body. "ok" exits 0. "stream" is an agent whose
// provider hangs: it opens a streaming chat call through $OPENAI_BASE_URL
// (which never sends content), and on wrapup_signal (USR1) reads
// $HERMES_WRAPUP_FILE into its log and makes one more call, whose answer
// says whether the proxy injected the notice; on TERM it says so and
// exits 1.
func playJob(kind string) int {
	fmt.Printf("job %s run %s deadline %s\n", kind, os.Getenv("HERMES_RUN_ID"), os.Getenv("HERMES_RUN_DEADLINE"))
	if kind == "ok" {
		return 0
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM)
	c := openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "slow-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("work")}}
	go func() {
		s := c.Chat.Completions.NewStreaming(context.Background(), params)
		for s.Next() {
			for _, ch := range s.Current().Choices {
				fmt.Printf("stream content %q\n", ch.Delta.Content)
			}
		}
		fmt.Printf("stream ended: %v\n", s.Err())
	}()
	for sig := range sigs {
		if sig == syscall.SIGTERM {
			fmt.Println("got TERM")
			return 1
		}
		b, err := os.ReadFile(os.Getenv("HERMES_WRAPUP_FILE"))
		fmt.Printf("wrapup notice: %s (err %v)\n", strings.TrimSpace(string(b)), err)
		r, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil {
			fmt.Printf("after wrapup: error %v\n", err)
			continue
		}
		fmt.Printf("after wrapup: %s\n", r.Choices[0].Message.Content)
	}
	return 1
}

// upstream is a scripted provider: streaming calls get headers and then
// nothing until the caller goes; a non-streaming call answers whether its
// messages hold the wrap-up notice.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream bool `json:"stream"`
		}
		json.Unmarshal(body, &req)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select { // hang without content
			case <-r.Context().Done():
			case <-quit:
			}
			return
		}
		answer := "no notice"
		if strings.Contains(string(body), "Wrap up now") {
			answer = "notice injected"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"slow-model","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}]}`, answer)
	}))
	t.Cleanup(func() { close(quit); srv.Close() })
	return srv
}

// jobUntil polls status (a run's end is another process's event) until
// unit is in state with job result want, or fails after within.
func (d *hermesd) jobUntil(unit string, state control.UnitState, want control.JobResult, within time.Duration) control.Unit {
	d.t.Helper()
	var u control.Unit
	testkit.EventuallyOK(d.t, within, func() error {
		if u = d.status()[unit]; u.State == state && u.Job != nil && u.Job.Result == want {
			return nil
		}
		return fmt.Errorf("job %s: %+v (state %s, error %q), want %s with result %q%s", unit, u.Job, u.State, u.Error, state, want, d.logTail())
	})
	return u
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestJobsThroughProxy: hermesd serves the proxy for a scripted provider;
// a job whose stream hangs gets the wrap-up notice (file, signal, and
// injected into its next call) and is stopped at its budget, marked budget
// exceeded; a job that exits 0 is not restarted.
func TestJobsThroughProxy(t *testing.T) {
	needsProcesses(t, "hermesd and job processes")
	up := upstream(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, fmt.Sprintf("gateway: {listen: \"127.0.0.1:0\"}\nproviders:\n  scripted:\n    base_url: %s/v1\n", up.URL))
	// The schedule never comes during the test: runs are started by hand.
	job := func(kind, extra string) string {
		return fmt.Sprintf("command: [%q]\nenv: {%s: %s}\nschedule: \"0 0 1 1 *\"\nrestart: on-failure\n%s", os.Args[0], jobEnv, kind, extra)
	}
	writeFile(t, filepath.Join(dir, "units", "agent.yaml"), job("stream", "run_budget_seconds: 4\nwrapup_signal: USR1\ntimeouts: {stop: 2s}\n"))
	writeFile(t, filepath.Join(dir, "units", "quick.yaml"), job("ok", ""))

	d := startDaemonWith(t, dir, daemonOpts{config: config})
	c := d.client()
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Proxy == nil || st.Proxy.Listen == "" || !slices.Equal(st.Proxy.Providers, []string{"scripted"}) {
		t.Fatalf("status proxy %+v, want listening with provider scripted", st.Proxy)
	}
	for _, u := range []string{"agent", "quick"} {
		if s := d.status()[u]; s.State != "inactive" || s.Job == nil || s.Job.Next.IsZero() {
			t.Errorf("%s before its first run: state %s job %+v, want inactive with a next fire", u, s.State, s.Job)
		}
		if err := c.Start(t.Context(), u); err != nil {
			t.Fatalf("start %s: %v", u, err)
		}
	}

	q := d.jobUntil("quick", "exited", "success", 10*time.Second)
	if q.State != "exited" || q.Restarts != 0 {
		t.Errorf("quick: state %s restarts %d, want exited 0", q.State, q.Restarts)
	}

	a := d.jobUntil("agent", "failed", "budget exceeded", 20*time.Second)
	if a.State != "failed" || !strings.Contains(a.Error, "budget exceeded") || a.Restarts != 0 {
		t.Errorf("agent: state %s error %q restarts %d, want failed, budget exceeded, no restart", a.State, a.Error, a.Restarts)
	}
	b, err := os.ReadFile(filepath.Join(dir, "state", "logs", "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	t.Logf("agent log:\n%s", log)
	notice := strings.Index(log, "wrapup notice: hermes: job agent (run "+a.Job.RunID+") has used 80% of its run budget of 4s")
	injected := strings.Index(log, "after wrapup: notice injected")
	term := strings.Index(log, "got TERM")
	if notice < 0 || injected < notice || term < injected {
		t.Errorf("agent log: want the wrap-up notice read, then the notice injected into the next call, then TERM at the deadline; got\n%s", log)
	}
	if strings.Contains(log, "stream content") {
		t.Errorf("agent log shows stream content from a provider that sends none:\n%s", log)
	}
	if strings.Count(log, "wrapup notice:") != 1 {
		t.Errorf("agent got %d wrap-up notices, want 1:\n%s", strings.Count(log, "wrapup notice:"), log)
	}

	// Still exited after the other job's whole run: not restarted.
	if q := d.status()["quick"]; q.State != "exited" || q.Restarts != 0 || q.Job.Result != "success" {
		t.Errorf("quick later: state %s restarts %d result %q, want exited 0 success", q.State, q.Restarts, q.Job.Result)
	}
}

// TestProxyPortInUse: hermesd refuses to start when gateway.listen is
// taken, with exit code 5 and a line naming the address.
func TestProxyPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "hermes.yaml")
	writeFile(t, config, fmt.Sprintf("gateway: {listen: %q}\nproviders:\n  p: {base_url: \"http://127.0.0.1:1/v1\"}\n", ln.Addr()))
	out := refusedStart(t, dir, config, exitcode.HermesdProxy)
	if !strings.Contains(out, "hermesd: provider proxy cannot listen") || !strings.Contains(out, ln.Addr().String()) {
		t.Errorf("hermesd output lacks the proxy error naming %s:\n%s", ln.Addr(), out)
	}
}

// TestLoadHook: each load gives budget-less jobs the agent's budget and
// swaps the proxy's provider set; a set that does not build keeps the old.
func TestLoadHook(t *testing.T) {
	set0, err := providers.New(&units.Config{Providers: map[string]units.Provider{"old": {BaseURL: "http://127.0.0.1:1/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Providers: set0, Token: "hermes-TESTTOKEN0123"})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatewayProxy{p: p, listen: units.DefaultListen}
	g.set.Store(set0)
	hook := loadHook(g, slog.New(slog.DiscardHandler))
	models := func() string {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
		req.Host = "127.0.0.1:7411"
		req.Header.Set("Authorization", "Bearer hermes-TESTTOKEN0123")
		p.ServeHTTP(rec, req)
		return rec.Body.String()
	}

	cfg := units.Config{Gateway: units.Gateway{Listen: units.DefaultListen}, Agent: units.Agent{RunBudget: time.Minute},
		Providers: map[string]units.Provider{"new": {BaseURL: "http://127.0.0.1:2/v1", Models: map[string]units.ProviderModel{"m1": {}}}}}
	l := reconciler.Loaded{Specs: []*units.Spec{
		{Name: "bare", Schedule: "* * * * *"},
		{Name: "own", Schedule: "* * * * *", RunBudget: 10 * time.Second},
		{Name: "svc"},
		{Name: "llm", Provider: &units.Provider{ID: "unitp", BaseURL: "http://127.0.0.1:3/v1"}},
	}}
	loaded := slices.Clone(l.Specs)
	hook(cfg, &l)
	for i, want := range []time.Duration{time.Minute, 10 * time.Second, 0, 0} {
		if got := l.Specs[i].RunBudget; got != want {
			t.Errorf("%s: run budget %v, want %v", l.Specs[i].Name, got, want)
		}
	}
	// The specs are shared with the loader's cache: the one given the
	// budget is a copy.
	if loaded[0].RunBudget != 0 || l.Specs[0] == loaded[0] {
		t.Errorf("the hook changed the loaded spec of bare (run budget %v), want a changed copy in its place", loaded[0].RunBudget)
	}
	if got := g.set.Load().IDs(); !slices.Equal(got, []string{"new", "unitp"}) {
		t.Errorf("providers after reload %v, want [new unitp]", got)
	}
	if m := models(); !strings.Contains(m, `"m1"`) {
		t.Errorf("/v1/models after reload %s, want m1 of the new set", m)
	}

	dup := reconciler.Loaded{Specs: []*units.Spec{{Name: "llm", Provider: &units.Provider{ID: "new", BaseURL: "http://127.0.0.1:4/v1"}}}}
	hook(cfg, &dup)
	if got := g.set.Load().IDs(); !slices.Equal(got, []string{"new", "unitp"}) {
		t.Errorf("providers after a duplicate id %v, want the last good [new unitp]", got)
	}
}
