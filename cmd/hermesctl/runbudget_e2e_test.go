package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/proxy"
)

// The test binary plays the child of `hermesctl run` (playRunChild) when
// envRunChild names its kind; envRunRecord is the file it records in. They
// are set by `env` in the child's command line, so that hermesctl (this
// binary too) never sees them.
const (
	envRunChild  = "HERMESCTL_TEST_RUN_CHILD"
	envRunRecord = "HERMESCTL_TEST_RUN_RECORD"
)

func init() {
	if kind := os.Getenv(envRunChild); kind != "" {
		os.Exit(playRunChild(kind, os.Getenv(envRunRecord)))
	}
}

// playRunChild is an agent under a run budget. It records, one line each
// with the time in Unix nanoseconds: its start (pid, run id, base URL);
// on the wrap-up signal (USR1) the notice file's text and the answer to
// one model call through $OPENAI_BASE_URL (whether the proxy injected the
// notice); on TERM that it got it, then, for kind "obey", that it exits.
// Kind "ignore" carries on after TERM, until KILL; kind "stream" too,
// with a streaming call started at once, and records how it ended
// ("streamend").
func playRunChild(kind, record string) int {
	f, err := os.OpenFile(record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 2
	}
	note := func(what string, args ...any) {
		fmt.Fprintf(f, "%d %s\n", time.Now().UnixNano(), fmt.Sprintf(what, args...))
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM)
	note("start pid=%d run=%s base=%s", os.Getpid(), os.Getenv("HERMES_RUN_ID"), os.Getenv("OPENAI_BASE_URL"))
	if kind == "stream" { // a stream in flight at the deadline
		go func() {
			c := openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")), option.WithMaxRetries(0))
			st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("work")}})
			n := 0
			for st.Next() {
				n++
			}
			note("streamend chunks=%d err=%v", n, st.Err())
		}()
	}
	for sig := range sigs {
		if sig == syscall.SIGTERM {
			note("term")
			if kind == "obey" {
				note("exit")
				return 3
			}
			continue
		}
		b, err := os.ReadFile(os.Getenv("HERMES_WRAPUP_FILE"))
		note("wrapup notice=%q err=%v", strings.TrimSpace(string(b)), err)
		c := openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")), option.WithMaxRetries(0))
		r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("work")}})
		if err != nil {
			note("call error=%v", err)
			continue
		}
		note("call answer=%s", r.Choices[0].Message.Content)
	}
	return 1
}

// runRecord is what playRunChild recorded: its lines by their first word,
// each with its time.
type runRecord map[string]struct {
	at   time.Time
	text string
}

func readRunRecord(t *testing.T, path string) (runRecord, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := runRecord{}
	for line := range strings.Lines(string(b)) {
		ns, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			t.Fatalf("record line %q: %v", line, err)
		}
		word, _, _ := strings.Cut(rest, " ")
		if _, dup := rec[word]; dup {
			t.Errorf("the child recorded %q twice:\n%s", word, b)
		}
		rec[word] = struct {
			at   time.Time
			text string
		}{time.Unix(0, n), rest}
	}
	return rec, string(b)
}

// budgetUpstream is a scripted provider: a chat call is answered with
// whether its messages hold the wrap-up notice; GET /models lists "m".
func budgetUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","created":1,"owned_by":"up"}]}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) { // chunks until the proxy hangs up
			w.Header().Set("Content-Type", "text/event-stream")
			for {
				if _, err := io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`+"\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
		answer := "no notice"
		if strings.Contains(string(body), "Wrap up now") {
			answer = "notice injected"
		}
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}]}`, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startBudgetHermesd starts a hermesd serving the proxy for the provider
// up (named "scripted"), stopped at the test's end. It returns its
// socket, the proxy's address, the proxy token and hermesd's log file.
func startBudgetHermesd(t *testing.T, up *httptest.Server) (socket, listen, token, log string) {
	t.Helper()
	dir := t.TempDir()
	units, state := filepath.Join(dir, "units"), filepath.Join(dir, "state")
	socket, log = filepath.Join(dir, "run", "hermesd.sock"), filepath.Join(dir, "hermesd.log")
	for _, d := range []string{units, filepath.Dir(socket)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "hermes.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "gateway: {listen: \"127.0.0.1:0\"}\nproviders:\n  scripted:\n    base_url: %s/v1\n", up.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	c := runHermesd(t, daemonPaths{units: units, state: state, socket: socket, log: log, config: config,
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}})
	st, err := c.Status(t.Context())
	if err != nil || st.Proxy == nil {
		t.Fatalf("status: proxy %+v, %v; want the proxy on", st.Proxy, err)
	}
	if token, err = proxy.LoadToken(state, false); err != nil {
		t.Fatal(err)
	}
	return socket, st.Proxy.Listen, token, log
}

// runOverBudget runs `hermesctl run` on socket with flags, its child this
// test binary playing kind and recording in record (playRunChild), and
// fails t unless hermesctl exits with the budget's status. It returns
// hermesctl's stderr, and when it started and ended.
func runOverBudget(t *testing.T, hermesctl, socket, kind, record string, flags ...string) (stderr string, began, ended time.Time) {
	t.Helper()
	args := append(append([]string{"--socket", socket, "run"}, flags...), "--",
		"env", envRunChild+"="+kind, envRunRecord+"="+record, "GORACE=atexit_sleep_ms=0", os.Args[0], "-test.run=^$")
	run := exec.Command(hermesctl, args...)
	run.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	var b strings.Builder
	run.Stderr = &b
	began = time.Now()
	err := run.Run()
	ended = time.Now()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.HermesctlBudget {
		t.Fatalf("hermesctl run: %v, want exit status %d; stderr:\n%s", err, exitcode.HermesctlBudget, b.String())
	}
	return b.String(), began, ended
}

// TestRunBudgetThroughProxy runs `hermesctl run --run-budget 2` against a
// real hermesd serving the proxy for a scripted provider. The run is
// registered with the proxy: the child's OPENAI_BASE_URL is the run's,
// and its call after the wrap-up signal carries the injected notice. The
// child gets the wrap-up signal at 80 % with the notice file written,
// then TERM at 100 %; one that ignores TERM is killed after the grace.
// hermesctl exits 124 with one line, and the run is unregistered. On the
// way, GET /v1/models through hermesd lists the provider's own model.
func TestRunBudgetThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hermesd and hermesctl run")
	}
	hermesctl := hermesctlBin(t)
	up := budgetUpstream(t)
	socket, listen, token, log := startBudgetHermesd(t, up)

	oc := openai.NewClient(option.WithBaseURL("http://"+listen+"/v1"), option.WithAPIKey(token), option.WithMaxRetries(0))
	page, err := oc.Models.List(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/models through hermesd: %v", err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "scripted/m" {
		t.Errorf("GET /v1/models through hermesd: got %+v, want the provider's own scripted/m", page.Data)
	}

	// The child is this race-built test binary: on a loaded machine it
	// took 1.7 s to start, so a 2 s budget's notice (at 80%) came before
	// it listened for it.
	const budget, grace = 6 * time.Second, time.Second
	for _, kind := range []string{"obey", "ignore"} {
		t.Run(kind, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "record")
			stderr, began, ended := runOverBudget(t, hermesctl, socket, kind, record,
				"--run-budget", strconv.Itoa(int(budget/time.Second)), "--wrapup-signal", "USR1", "--grace", grace.String())
			if want := "hermesctl: run: budget exceeded: env (run run-"; !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", stderr, want)
			}

			rec, all := readRunRecord(t, record)
			t.Logf("the child recorded:\n%s", all)
			start, wrap, term := rec["start"], rec["wrapup"], rec["term"]
			var pid int
			var id, base string
			if _, err := fmt.Sscanf(start.text, "start pid=%d run=%s base=%s", &pid, &id, &base); err != nil {
				t.Fatalf("start line %q: %v", start.text, err)
			}
			if want := "http://" + listen + "/run/" + url.PathEscape(id) + "/v1"; !strings.HasPrefix(id, "run-") || base != want {
				t.Errorf("child's run %q and OPENAI_BASE_URL %q, want a run id and the run's base URL %s", id, base, want)
			}
			if wrap.at.IsZero() || term.at.IsZero() || !wrap.at.Before(term.at) {
				t.Fatalf("want the wrap-up signal, then TERM; got\n%s", all)
			}
			// Lower bounds only: the budget's clock starts after began, so
			// neither can come earlier on any machine; how much later a
			// loaded machine makes them is not the feature (the order is,
			// checked above, and the notice's own 80%).
			if at := wrap.at.Sub(began); at < budget*8/10 {
				t.Errorf("wrap-up signal %v after hermesctl started, want at 80%% of the %v budget or later", at, budget)
			}
			if at := term.at.Sub(began); at < budget {
				t.Errorf("TERM %v after hermesctl started, want at the %v budget or later", at, budget)
			}
			if !strings.Contains(wrap.text, "has used 80% of its run budget of "+budget.String()) || !strings.Contains(wrap.text, "err=<nil>") {
				t.Errorf("wrap-up line %q, want the notice read from HERMES_WRAPUP_FILE", wrap.text)
			}
			if got := rec["call"].text; got != "call answer=notice injected" {
				t.Errorf("the call after the wrap-up: %q, want the proxy to have injected the notice", got)
			}
			switch _, exited := rec["exit"]; {
			case kind == "obey" && !exited:
				t.Errorf("the child that obeys TERM recorded no exit:\n%s", all)
			case kind == "ignore" && exited:
				t.Errorf("the child that ignores TERM exited:\n%s", all)
			case kind == "ignore" && ended.Sub(term.at) < grace:
				t.Errorf("hermesctl exited %v after TERM, want KILL after the %v grace", ended.Sub(term.at), grace)
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("child %d after hermesctl exited: kill 0 = %v, want no such process", pid, err)
			}

			// hermesd unregistered the run: its base URL is refused, as a
			// run that spent its budget (proxy.RunMemory).
			if err := testkit.WaitFile(log, regexp.MustCompile(`ad-hoc run ended.* run=`+regexp.QuoteMeta(id)), daemonDeadline); err != nil {
				t.Fatal(err)
			}
			late := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(token), option.WithMaxRetries(0))
			_, err = late.Chat.Completions.New(t.Context(),
				openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("late")}})
			var api *openai.Error
			if !errors.As(err, &api) || api.StatusCode != http.StatusGone || api.Code != "run_budget_exceeded" {
				t.Errorf("a call of the ended run: %v, want 410 run_budget_exceeded", err)
			}
		})
	}
}

// TestRunBudgetEndsCalls: at a `hermesctl run --run-budget` deadline, the
// proxy ends the run's stream in flight (run_budget_exceeded) by its own
// clock of the run, which reaches the deadline first: a child blocked in a
// call is free at its deadline, not held until KILL (its stream used to
// end only with it). The child ignores TERM, so that it lives to record
// how its stream ended.
func TestRunBudgetEndsCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hermesd and hermesctl run")
	}
	hermesctl := hermesctlBin(t)
	socket, _, _, _ := startBudgetHermesd(t, budgetUpstream(t))
	record := filepath.Join(t.TempDir(), "record")
	// A budget that a race-built child starts well within on a loaded
	// machine (it must be blocked in its call before the deadline).
	runOverBudget(t, hermesctl, socket, "stream", record, "--run-budget", "6", "--grace", "5s")
	rec, all := readRunRecord(t, record)
	t.Logf("the child recorded:\n%s", all)
	// The child ignores TERM and is killed after the grace: a stream the
	// proxy left open would end only with it, unrecorded.
	end, term := rec["streamend"], rec["term"]
	if end.at.IsZero() {
		t.Fatalf("the child's stream was still open when the child was killed, %s after the run's deadline: the proxy did not end it", "5s")
	}
	t.Logf("the stream ended %v before TERM", term.at.Sub(end.at))
	if !strings.Contains(end.text, "reached its deadline") || !strings.Contains(end.text, "the run's budget is spent") {
		t.Errorf("the stream ended with %q, want the run's deadline", end.text)
	}
}
