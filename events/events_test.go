package events

import (
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestKindRoundTrip(t *testing.T) {
	for k := UnitState; k <= Overflow; k++ {
		t.Run(k.String(), func(t *testing.T) {
			b, err := k.MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			var got Kind
			if err := got.UnmarshalText(b); err != nil {
				t.Fatal(err)
			}
			if got != k {
				t.Errorf("got %v, want %v", got, k)
			}
		})
	}
	for _, bad := range []string{"", "unit", "UNIT.STATE", "unit.state "} {
		var k Kind
		if err := k.UnmarshalText([]byte(bad)); !errors.Is(err, ErrKind) {
			t.Errorf("UnmarshalText(%q): got %v, want ErrKind", bad, err)
		}
	}
	if _, err := Kind(0).MarshalText(); !errors.Is(err, ErrKind) {
		t.Errorf("Kind(0).MarshalText: got %v, want ErrKind", err)
	}
}

// TestSchema pins the JSON of each kind: the schema the README documents.
func TestSchema(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Seq: 1, Time: at, Kind: UnitState, Unit: "web", State: "failed", From: "running", Reason: "exited: signal: killed", PID: 42, Restarts: 1},
			`{"seq":1,"time":"2026-12-01T09:00:00Z","kind":"unit.state","unit":"web","state":"failed","from":"running","reason":"exited: signal: killed","pid":42,"restarts":1}`},
		{Event{Seq: 2, Time: at, Kind: UnitReady, Unit: "web", PID: 43, Ready: true, Duration: 1500 * time.Millisecond},
			`{"seq":2,"time":"2026-12-01T09:00:00Z","kind":"unit.ready","unit":"web","pid":43,"ready":true,"duration_ns":1500000000}`},
		{Event{Seq: 3, Time: at, Kind: Reload, Outcome: "applied", Duration: time.Millisecond, Plan: &Plan{Start: []string{"a"}, Stop: []string{}, Restart: []string{}, Keep: []string{"b"}}},
			`{"seq":3,"time":"2026-12-01T09:00:00Z","kind":"reload","duration_ns":1000000,"outcome":"applied","plan":{"start":["a"],"stop":[],"restart":[],"keep":["b"]}}`},
		{Event{Seq: 4, Time: at, Kind: Cut, Provider: "local", Model: "m", Session: "s", Layer: "stale_stream", Value: 2 * time.Second, Source: "explicit 2s", Setting: "providers.local.stale_timeout_seconds"},
			`{"seq":4,"time":"2026-12-01T09:00:00Z","kind":"proxy.cut","provider":"local","model":"m","session":"s","layer":"stale_stream","value_ns":2000000000,"source":"explicit 2s","setting":"providers.local.stale_timeout_seconds"}`},
	} {
		t.Run(tc.e.Kind.String(), func(t *testing.T) {
			b, err := json.Marshal(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			back, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			b2, _ := json.Marshal(back)
			if string(b2) != tc.want {
				t.Errorf("round trip: got %s", b2)
			}
		})
	}
	if _, err := Decode([]byte(`{"seq":1,"kind":"unit.exploded"}`)); !errors.Is(err, ErrKind) {
		t.Errorf("Decode of an unknown kind: got %v, want ErrKind", err)
	}
}

func TestRingIsBounded(t *testing.T) {
	b := New(Options{History: 3})
	for i := 0; i < 5; i++ {
		b.Publish(Event{Kind: UnitState, Unit: strings.Repeat("u", i+1)})
	}
	h := b.History()
	var seqs []uint64
	for _, e := range h {
		seqs = append(seqs, e.Seq)
	}
	if want := []uint64{3, 4, 5}; !slices.Equal(seqs, want) {
		t.Errorf("history seqs: got %v, want %v", seqs, want)
	}
}

// TestSubscribeNoGapNoRepeat publishes from several goroutines while
// subscribing: history plus the stream is every event exactly once.
func TestSubscribeNoGapNoRepeat(t *testing.T) {
	b := New(Options{History: 10000, Buffer: 10000})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for i := 0; i < 500; i++ {
				b.Publish(Event{Kind: UnitState})
			}
		})
	}
	hist, s := b.Subscribe()
	defer s.Close()
	wg.Wait()
	seen := map[uint64]int{}
	for _, e := range hist {
		seen[e.Seq]++
	}
	for len(seen) < 2000 {
		e, ok := <-s.C()
		if !ok {
			t.Fatalf("subscription closed: %v", s.Err())
		}
		seen[e.Seq]++
	}
	for seq := uint64(1); seq <= 2000; seq++ {
		if seen[seq] != 1 {
			t.Fatalf("event %d seen %d times, want 1", seq, seen[seq])
		}
	}
}

// TestSlowSubscriberDropped: a subscriber that never reads does not hold
// the publisher; it is dropped with ErrBehind, the others keep receiving.
func TestSlowSubscriberDropped(t *testing.T) {
	var observed int
	b := New(Options{Buffer: 2, Observe: func(Event) { observed++ }})
	_, slow := b.Subscribe()
	_, fast := b.Subscribe()
	defer fast.Close()
	got := 0
	for i := 0; i < 10; i++ {
		b.Publish(Event{Kind: UnitState}) // would block forever if it waited for slow
		<-fast.C()
		got++
	}
	if got != 10 || observed != 10 {
		t.Errorf("fast got %d, observed %d, want 10 and 10", got, observed)
	}
	n := 0
	for range slow.C() { // drains the buffer, then sees it closed
		n++
	}
	if n != 2 {
		t.Errorf("slow got %d events before being dropped, want its buffer, 2", n)
	}
	if !errors.Is(slow.Err(), ErrBehind) {
		t.Errorf("slow.Err: got %v, want ErrBehind", slow.Err())
	}
	if b.Dropped() != 1 || b.Subscribers() != 1 {
		t.Errorf("Dropped %d, Subscribers %d, want 1 and 1", b.Dropped(), b.Subscribers())
	}
	slow.Close() // after a drop: no panic, Err kept
	if !errors.Is(slow.Err(), ErrBehind) {
		t.Errorf("after Close: Err %v, want ErrBehind kept", slow.Err())
	}
	fast.Close()
	fast.Close()
	if fast.Err() != nil {
		t.Errorf("closed subscriber's Err: got %v, want nil", fast.Err())
	}
}

func TestNilBusDiscards(t *testing.T) {
	var b *Bus
	b.Publish(Event{Kind: UnitState}) // no panic
}

// TestSubscriberCost: what a subscriber costs the bus is bounded and
// small, whatever it reads: its backlog is of shared events (a pointer
// each), so that hundreds of readers that never read (`hermesctl events
// -f` left stopped) hold a few KB each, not their own copy of every event
// (some 80 KB each with the default buffer).
func TestSubscriberCost(t *testing.T) {
	b := New(Options{})
	for range 2 * DefaultHistory {
		b.Publish(Event{Kind: UnitState, Unit: "web", State: "running", From: "starting", Reason: "a reason of some length, as a failed start gives"})
	}
	const n = 500
	subs := make([]*Subscription, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		_, s := b.Subscribe()
		subs = append(subs, s)
	}
	// Every subscriber's backlog full: none reads.
	for range DefaultBuffer {
		b.Publish(Event{Kind: UnitState, Unit: "web", State: "running", From: "starting", Reason: "a reason of some length, as a failed start gives"})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if b.Subscribers() != n {
		t.Fatalf("%d subscribers, want %d (none dropped: each buffer holds its backlog)", b.Subscribers(), n)
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d subscribers with a full backlog of %d events: %d bytes each", n, DefaultBuffer, per)
	if per > 8<<10 {
		t.Errorf("a subscriber with a full backlog costs %d bytes, want at most 8 KiB", per)
	}
	for _, s := range subs {
		s.Close()
	}
}
