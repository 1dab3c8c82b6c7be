package events

import (
	"errors"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultHistory = 1024 // events kept in the ring
	DefaultBuffer  = 256  // events a subscriber may lag behind before it is dropped
)

// ErrBehind is a dropped subscriber's Err: it fell behind by more than its
// buffer, and its channel was closed.
var ErrBehind = errors.New("event reader fell behind and was dropped")

// Options tune a Bus. The zero value is ready to use.
type Options struct {
	History int // ring size; ≤ 0 is DefaultHistory
	Buffer  int // per-subscriber buffer; ≤ 0 is DefaultBuffer
	// Observe is called with every event, in order, by Publish with the
	// bus's lock held: it must be quick, and must neither block nor
	// publish. hermesd counts metrics with it.
	Observe func(Event)
	Now     func() time.Time // nil is time.Now
}

// Bus keeps the recent history and fans events out. Safe for concurrent
// use; the zero value is not: use New.
type Bus struct {
	observe func(Event)
	now     func() time.Time
	buffer  int

	mu   sync.Mutex
	seq  uint64                     // guarded by mu: the last Seq given
	ring []*Event                   // guarded by mu: the last len(ring) events, oldest at head
	head int                        // guarded by mu
	subs map[*Subscription]struct{} // guarded by mu
	lost uint64                     // guarded by mu: subscribers dropped so far
}

// New returns an empty Bus.
func New(opts Options) *Bus {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Bus{
		observe: opts.Observe, now: opts.Now, buffer: opts.Buffer,
		ring: make([]*Event, 0, opts.History), subs: map[*Subscription]struct{}{},
	}
}

// Publish stamps e (Seq; Time unless set) and records it. It never blocks:
// a subscriber with no room left is dropped. The ring and every
// subscriber share one copy of e: a subscriber's backlog costs a pointer
// an event, so that many slow readers cost little. A nil Bus discards e, so that
// a part run without one (a test) needs no check.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.Seq = b.seq
	if e.Time.IsZero() {
		e.Time = b.now()
	}
	ep := &e
	if len(b.ring) < cap(b.ring) {
		b.ring = append(b.ring, ep)
	} else {
		b.ring[b.head] = ep
		b.head = (b.head + 1) % len(b.ring)
	}
	if b.observe != nil {
		b.observe(e)
	}
	for s := range b.subs {
		select {
		case s.c <- ep:
		default:
			b.dropLocked(s, ErrBehind)
		}
	}
}

// historyLocked returns the ring, oldest first.
func (b *Bus) historyLocked() []*Event {
	out := make([]*Event, 0, len(b.ring))
	out = append(out, b.ring[b.head:]...)
	return append(out, b.ring[:b.head]...)
}

// History returns the recent events, oldest first.
func (b *Bus) History() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Event, 0, len(b.ring))
	for _, e := range b.historyLocked() {
		out = append(out, *e)
	}
	return out
}

// Dropped returns how many subscribers were dropped for falling behind.
func (b *Bus) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lost
}

// Subscribers returns the number of live subscriptions.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Subscribe returns the history and a subscription that receives every
// event published after it, with neither a gap nor a repeat between the
// two. The events are shared with the bus and every other subscriber:
// read them, never change them. The caller must Close the subscription.
func (b *Bus) Subscribe() ([]*Event, *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &Subscription{b: b, c: make(chan *Event, b.buffer)}
	b.subs[s] = struct{}{}
	return b.historyLocked(), s
}

func (b *Bus) dropLocked(s *Subscription, err error) {
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	s.err = err
	if err != nil {
		b.lost++
	}
	close(s.c)
}

// Subscription receives events from a Bus.
type Subscription struct {
	b   *Bus
	c   chan *Event
	err error // guarded by b.mu; set before c is closed
}

// C delivers the events, shared (see Subscribe). It is closed when the
// subscriber is dropped (Err says why) or closed.
func (s *Subscription) C() <-chan *Event { return s.c }

// Err is nil while C is open or after Close, ErrBehind when the
// subscriber was dropped for falling behind.
func (s *Subscription) Err() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.err
}

// Close ends the subscription; C is closed. Safe to call more than once.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.dropLocked(s, nil)
}
