package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/hermes-units/hermes/timeouts"
)

// TestReport: each call is reported once it has ended, with its cut, the
// breaker's trip on the call that opens it, the refusal while open, and
// the reset on the call that closes it.
func TestReport(t *testing.T) {
	reports := make(chan Report, 16)
	h := newHarness(t, setup{env: map[string]string{timeouts.EnvGiveUp: "2"}, report: func(r Report) { reports <- r }})
	next := func(step string) Report {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no report within 10s", step)
			return Report{}
		}
	}
	line := func(r Report) string {
		cut := "-"
		if r.Cut != nil {
			cut = r.Cut.Layer.String()
		}
		return fmt.Sprintf("%s/%s %s stream=%v outcome=%d gaveup=%v cut=%s streak=%d/%d tripped=%v changed=%v ttft=%v",
			r.Provider, r.Model, r.Session, r.Stream, r.Outcome, r.GaveUp, cut, r.Streak, r.Threshold, r.Tripped, r.Changed, r.TTFT > 0)
	}
	c := h.client("/v1/", option.WithHeader(HeaderSession, "s1"))
	h.up.play(keepAlives)
	for i, want := range []string{
		"openai/gpt-4o s1 stream=true outcome=1 gaveup=false cut=stale_stream streak=1/2 tripped=false changed=false ttft=false",
		"openai/gpt-4o s1 stream=true outcome=1 gaveup=false cut=stale_stream streak=2/2 tripped=true changed=true ttft=false",
		"openai/gpt-4o s1 stream=true outcome=2 gaveup=true cut=- streak=2/2 tripped=true changed=false ttft=false",
	} {
		stream(t, c, "gpt-4o")
		if got := line(next(fmt.Sprint("call ", i+1))); got != want {
			t.Errorf("call %d:\ngot  %s\nwant %s", i+1, got, want)
		}
	}
	h.up.play(answer)
	if _, err := stream(t, c, "gpt-4o-mini"); err != nil {
		t.Fatal(err)
	}
	want := "openai/gpt-4o-mini s1 stream=true outcome=0 gaveup=false cut=- streak=0/2 tripped=false changed=true ttft=true"
	r := next("model change")
	if got := line(r); got != want {
		t.Errorf("model change:\ngot  %s\nwant %s", got, want)
	}
	if r.Duration < r.TTFT {
		t.Errorf("duration %v shorter than the time to first token %v", r.Duration, r.TTFT)
	}
}
