package proxy

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
)

// modelIDs lists the proxy's models through the openai-go client.
func modelIDs(t *testing.T, h *harness) []string {
	t.Helper()
	c := h.client("/v1/")
	page, err := c.Models.List(t.Context())
	if err != nil {
		t.Fatalf("Models.List: %s", errMessage(t, err))
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// listOf answers GET …/models with ids (created 7 each).
func listOf(ids ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		var b strings.Builder
		b.WriteString(`{"object":"list","data":[`)
		for i, id := range ids {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":%q,"object":"model","created":7,"owned_by":"someone"}`, id)
		}
		b.WriteString("]}")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, b.String())
	}
}

// TestModelsListed: GET /v1/models adds what the provider's own GET
// /models lists, as PROVIDER/MODEL, to the configured models (a listed
// model that is configured appears once, by its configured name), sorted;
// the provider is asked once, with its API key, however many clients list;
// and a listed name routes to that model.
func TestModelsListed(t *testing.T) {
	var auth, path atomic.Value
	list := listOf("gpt-4o", "gpt-5", "openai/gpt-oss", "", "gpt-5")
	h := newHarness(t, setup{list: func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		path.Store(r.URL.Path)
		list(w, r)
	}})
	h.up.play(answer)
	want := "gpt-4o,gpt-4o-mini,o3,openai/gpt-5,openai/openai/gpt-oss"
	for i := range 2 {
		if got := strings.Join(modelIDs(t, h), ","); got != want {
			t.Errorf("list %d: got models %s, want %s", i+1, got, want)
		}
	}
	if n := h.up.listCalls.Load(); n != 1 {
		t.Errorf("the provider was asked for its models %d times for two lists, want once (cached)", n)
	}
	if got := auth.Load(); got != "Bearer upstream-key" {
		t.Errorf("GET /models carried Authorization %q, want the provider's key", got)
	}
	if got := path.Load(); got != "/v1/models" {
		t.Errorf("the provider was asked at %q, want /v1/models (base_url + /models)", got)
	}
	c := h.client("/v1/")
	page, err := c.Models.List(t.Context())
	if err != nil {
		t.Fatal(errMessage(t, err))
	}
	for _, m := range page.Data {
		if m.ID == "openai/gpt-5" && (m.Created != 7 || m.OwnedBy != "openai") {
			t.Errorf("openai/gpt-5: got created %d owned_by %q, want 7 and the provider id openai", m.Created, m.OwnedBy)
		}
	}
	for _, tt := range []struct{ listed, upstream string }{{"openai/gpt-5", "gpt-5"}, {"openai/openai/gpt-oss", "openai/gpt-oss"}} {
		if _, err := c.Chat.Completions.New(t.Context(), chatParams(tt.listed)); err != nil {
			t.Fatalf("chat with %s: %s", tt.listed, errMessage(t, err))
		}
		if body, _ := h.up.last(); body["model"] != tt.upstream {
			t.Errorf("chat with %s: the provider got model %v, want %s", tt.listed, body["model"], tt.upstream)
		}
	}
}

// TestModelsRefreshedOnReload: SetProviders asks the providers again, and
// only it: client requests after it are answered from the new listing.
func TestModelsRefreshedOnReload(t *testing.T) {
	var current atomic.Pointer[http.HandlerFunc]
	first := listOf("gpt-5")
	current.Store(&first)
	h := newHarness(t, setup{list: func(w http.ResponseWriter, r *http.Request) { (*current.Load())(w, r) }})
	if got, want := strings.Join(modelIDs(t, h), ","), "gpt-4o,gpt-4o-mini,o3,openai/gpt-5"; got != want {
		t.Fatalf("before the reload: got %s, want %s", got, want)
	}
	second := listOf("gpt-6")
	current.Store(&second)
	if got, want := strings.Join(modelIDs(t, h), ","), "gpt-4o,gpt-4o-mini,o3,openai/gpt-5"; got != want {
		t.Errorf("a client request asked the provider again: got %s, want the cached %s", got, want)
	}
	h.proxy.SetProviders(h.proxy.set.Load())
	for i := range 2 {
		if got, want := strings.Join(modelIDs(t, h), ","), "gpt-4o,gpt-4o-mini,o3,openai/gpt-6"; got != want {
			t.Errorf("after the reload, list %d: got %s, want %s", i+1, got, want)
		}
	}
	if n := h.up.listCalls.Load(); n != 2 {
		t.Errorf("the provider was asked %d times, want twice (start, reload)", n)
	}
}

// TestModelsProviderFails: a provider whose list cannot be had contributes
// its configured models only; the client gets no error, and the failure is
// logged once, however many clients list.
func TestModelsProviderFails(t *testing.T) {
	tests := []struct {
		name string
		list http.HandlerFunc
		env  map[string]string
		log  string
		// timeout bounds the provider's answer; 0 is 300 ms.
		timeout time.Duration
	}{
		{name: "server error", log: "answered 500 Internal Server Error", list: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down", http.StatusInternalServerError)
		}},
		{name: "not a list", log: `not a model list: the answer has no "data" array`, list: func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"error":{"message":"no"}}`)
		}},
		{name: "not JSON", log: "not a model list", list: func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "<html>hello</html>")
		}},
		{name: "oversize body", log: "the answer is over 4 MiB", timeout: time.Minute, list: func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"object":"list","data":[{"id":"big"}],"pad":"`)
			pad := strings.Repeat("x", 64<<10)
			for range (maxModelsBody >> 16) + 2 {
				if _, err := io.WriteString(w, pad); err != nil {
					return // the proxy stopped reading
				}
			}
			io.WriteString(w, `"}`)
		}},
		{name: "too slow", log: "no answer within 300ms", list: func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}},
		{name: "connection dropped", log: `Get "http://api.openai.test/v1/models": EOF`, list: func(w http.ResponseWriter, _ *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}},
		{name: "API key not set", env: map[string]string{"OPENAI_API_KEY": ""}, log: "the API key variable OPENAI_API_KEY is not set", list: listOf("gpt-5")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log testkit.Lines
			h := newHarness(t, setup{list: tt.list, env: tt.env, logf: log.Logf, modelsTimeout: cmp.Or(tt.timeout, 300*time.Millisecond)})
			for i := range 2 {
				if got, want := strings.Join(modelIDs(t, h), ","), "gpt-4o,gpt-4o-mini,o3"; got != want {
					t.Errorf("list %d: got %s, want the configured models %s", i+1, got, want)
				}
			}
			lines := log.Matching("provider openai")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.log) || !strings.Contains(lines[0], "lists only its configured models") {
				t.Errorf("got log lines %q, want one saying %q", lines, tt.log)
			}
		})
	}
}

// TestModelsIDCap: a provider listing more than maxModelIDs models has the
// first maxModelIDs listed, and the cut logged; an id over maxModelID bytes
// is dropped.
func TestModelsIDCap(t *testing.T) {
	ids := []string{strings.Repeat("m", maxModelID+1)}
	for i := range maxModelIDs + 3 {
		ids = append(ids, fmt.Sprintf("model-%05d", i))
	}
	var log testkit.Lines
	h := newHarness(t, setup{list: listOf(ids...), logf: log.Logf})
	got := modelIDs(t, h)
	if want := 3 + maxModelIDs; len(got) != want {
		t.Errorf("got %d models, want %d (3 configured, %d listed)", len(got), want, maxModelIDs)
	}
	for _, id := range got {
		if id == fmt.Sprintf("openai/model-%05d", maxModelIDs) || len(id) > len("openai/")+maxModelID {
			t.Errorf("got model %.40s…, want it dropped", id)
		}
	}
	if lines := log.Matching("models more than"); len(lines) != 1 || !strings.Contains(lines[0], "listed 4 models more than the 4096 kept") {
		t.Errorf("got log lines %q, want one saying how many were dropped", lines)
	}
}

// FuzzParseModelList: whatever a provider answers, the list kept is
// bounded, its ids distinct, non-empty and short enough, and what was
// dropped is counted.
func FuzzParseModelList(f *testing.F) {
	for _, s := range []string{
		`{"object":"list","data":[{"id":"a","created":1},{"id":"b"}]}`,
		`{"data":[{"id":""},{"id":"a"},{"id":"a"}]}`,
		`{"data":null}`, `{"data":{}}`, `[]`, `null`, `{"data":[1,2]}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		models, dropped, err := parseModelList(data)
		if err != nil {
			if len(models) != 0 || dropped != 0 {
				t.Fatalf("error %v with %d models and %d dropped, want none", err, len(models), dropped)
			}
			return
		}
		if len(models) > maxModelIDs || dropped < 0 {
			t.Fatalf("got %d models and %d dropped", len(models), dropped)
		}
		seen := map[string]bool{}
		for _, m := range models {
			if m.id == "" || len(m.id) > maxModelID || seen[m.id] {
				t.Fatalf("kept id %q (len %d, seen before %v)", m.id, len(m.id), seen[m.id])
			}
			seen[m.id] = true
		}
	})
}
