package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/testkit"
	"github.com/hermes-units/hermes/units"
)

// TestClientReleasedAtDone: the client's response ends as soon as the
// terminal event is relayed, while the provider keeps the stream open and
// the drain (here an hour) has not elapsed; the proxy owns the upstream's
// drain, and ends it when it shuts down.
func TestClientReleasedAtDone(t *testing.T) {
	h := newHarness(t, setup{agent: units.Agent{StreamDrainTimeout: time.Hour}, scale: 1})
	release := make(chan struct{})
	h.up.play(func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		sseStart(w)
		send(w, chunk("content", "hello")+finish+"data: [DONE]\n\n")
		select { // the provider never closes: the proxy must
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	// openai-go stops reading at [DONE] by itself; a client that reads the
	// response to its end (the Node SDK, curl) is the one a held response
	// keeps waiting. Both are released.
	done := make(chan struct{})
	var text string
	var err error
	var raw []byte
	go func() {
		defer close(done)
		if text, err = stream(t, h.client("/v1/"), "gpt-4o"); err != nil {
			return
		}
		var resp *http.Response
		resp, err = h.hc.Post(h.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[]}`))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		raw, err = io.ReadAll(resp.Body)
	}()
	testkit.Receive(t, 10*time.Second, done, "the client is still held after [DONE]: the proxy waits for the upstream instead of ending the response")
	if err != nil || text != "hello" || !strings.HasSuffix(string(raw), "data: [DONE]\n\n") {
		t.Fatalf("got %q and a body of %q, %v; want hello and a body ending at [DONE]", text, raw, err)
	}
	if _, ok := testkit.Ready(h.up.exited); ok {
		t.Fatal("the upstream was closed at once, want it drained")
	}
	for _, st := range h.proxy.Status() {
		if st.Streak != 0 {
			t.Errorf("got %+v, want streak 0: a released call is a completed one", st)
		}
	}
	if err := h.stop(); err != nil { // shutdown ends the drain in flight
		t.Errorf("Serve: got %v, want nil", err)
	}
	h.up.waitExit(t, 2)
}
