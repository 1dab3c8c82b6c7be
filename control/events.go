package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hermes-units/hermes/events"
)

// The event stream (`hermesctl events`, `status --watch`, `top`):
//
//	GET /v1/events[?follow=1][&history=0]  → JSON lines (application/x-ndjson)
//
// Each line is one events.Event. Without follow the answer is the recent
// history (the daemon's ring) and ends. With follow it is the history
// (unless history=0), then every event as it happens, until the client
// goes away or the daemon stops. A reader that falls behind by more than
// its buffer gets a last line of kind "overflow" (seq: the last event it
// was sent) and the stream ends; it may reconnect.
const pathEvents = "/v1/events"

// eventWriteTimeout bounds one write of the stream: a client that stops
// reading is dropped rather than holding a goroutine forever.
const eventWriteTimeout = 10 * time.Second

// ErrNoEvents reports a daemon that keeps no event stream.
var ErrNoEvents = errors.New("hermesd keeps no event stream")

// events serves pathEvents from s.bus. It ends when the client goes away,
// or when end is closed (the server shuts down).
func (s *Server) events(end <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.bus == nil {
			writeError(w, fmt.Errorf("%w: is it older than this hermesctl?", ErrNoEvents))
			return
		}
		q := r.URL.Query()
		follow := q.Get("follow") == "1"
		history := q.Get("history") != "0"
		var hist []*events.Event
		var sub *events.Subscription
		if follow {
			hist, sub = s.bus.Subscribe()
			defer sub.Close()
		} else {
			for _, e := range s.bus.History() {
				hist = append(hist, &e)
			}
		}
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		var last uint64
		send := func(e *events.Event) bool {
			_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
			if enc.Encode(e) != nil {
				return false
			}
			last = e.Seq
			return true
		}
		if history {
			for _, e := range hist {
				if !send(e) {
					return
				}
			}
		} else if n := len(hist); n > 0 {
			last = hist[n-1].Seq
		}
		if rc.Flush() != nil || !follow {
			return
		}
		for {
			select {
			case e, ok := <-sub.C():
				if !ok {
					send(&events.Event{Seq: last, Time: time.Now(), Kind: events.Overflow,
						Reason: fmt.Sprintf("%v after event %d; reconnect to go on", sub.Err(), last)})
					_ = rc.Flush()
					return
				}
				if !send(e) {
					return
				}
				if len(sub.C()) == 0 && rc.Flush() != nil {
					return
				}
			case <-r.Context().Done():
				return
			case <-end:
				return
			}
		}
	}
}

// EventOptions choose what Client.Events reads.
type EventOptions struct {
	Follow    bool // go on with events as they happen
	NoHistory bool // with Follow: skip the recent history
	// Opened, with Follow, is called once the daemon has subscribed the
	// stream, before the first event: everything the daemon publishes
	// from then on is on it. A client that subscribes before it acts
	// (hermesctl start) misses no outcome of its action.
	Opened func()
}

// ErrBehind is returned by Client.Events when the daemon dropped the stream
// because its reader fell behind.
var ErrBehind = events.ErrBehind

// Events reads the event stream and calls fn with each event, in order,
// until the stream ends (without Follow: after the history), ctx ends, or
// fn returns an error (returned as is). An overflow line ends it with an
// error wrapping ErrBehind.
func (c *Client) Events(ctx context.Context, o EventOptions, fn func(events.Event) error) error {
	q := url.Values{}
	if o.Follow {
		q.Set("follow", "1")
		if o.NoHistory {
			q.Set("history", "0")
		}
	}
	p := pathEvents
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	resp, err := c.send(ctx, http.MethodGet, p, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return answerError(resp, data, fmt.Sprintf("hermesd answered %s to the event stream; are hermesctl and hermesd the same version?", resp.Status))
	}
	// The daemon subscribes before it sends the answer's header.
	if o.Follow && o.Opened != nil {
		o.Opened()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		e, err := events.Decode(sc.Bytes())
		if err != nil {
			return fmt.Errorf("hermesd sent an event this hermesctl does not understand (%w); are they the same version?", err)
		}
		if e.Kind == events.Overflow {
			return fmt.Errorf("%w: %s", ErrBehind, e.Reason)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("reading hermesd's event stream on %s: %w", c.path, err)
	}
	return nil
}
