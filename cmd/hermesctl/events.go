package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/spf13/cobra"
)

// eventsOptions are the flags of events, and where it prints.
type eventsOptions struct {
	clientOptions
	follow bool // -f
}

func newEventsCmd(g *globals) *cobra.Command {
	opts := &eventsOptions{clientOptions: clientOptions{g: g}}
	cmd := opts.command(&cobra.Command{
		Use:   "events",
		Short: "Show what hermesd did recently; -f follows as it happens",
		Long: "Print hermesd's recent events (a bounded history it keeps): unit state changes\n" +
			"with their reason, readiness, restarts and their cause, reloads and their plan,\n" +
			"config errors, adoption and release, supervisor restarts, and the provider\n" +
			"proxy's cuts and breaker trips and resets. -f goes on printing events as they\n" +
			"happen until interrupted. -o json prints one JSON object per line, with the\n" +
			"schema documented in the README (fields are added, never renamed).",
		Args: cobra.NoArgs,
	}, func(ctx context.Context, _ []string) error {
		return runEvents(ctx, opts)
	})
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "go on printing events as they happen")
	return cmd
}

// runEvents prints hermesd's history of events and, with -f, the events
// as they happen until ctx ends (an interrupt: no error then). -f follows
// across a restart of hermesd (followEvents reconnects, saying so on
// stderr): the new hermesd's history is printed, and what the stream had
// printed already is not printed twice.
func runEvents(ctx context.Context, opts *eventsOptions) error {
	enc := json.NewEncoder(opts.out)
	print := func(e events.Event) error {
		if opts.json {
			return enc.Encode(e)
		}
		_, err := fmt.Fprintln(opts.out, eventLine(e))
		return err
	}
	if !opts.follow {
		return withClient(opts.g, func(c *control.Client) error {
			if err := c.Events(ctx, control.EventOptions{}, print); err != nil {
				return fmt.Errorf("events: %w", err)
			}
			return nil
		})
	}
	// hermesd must be there at the start: a mistyped socket is an error,
	// not a wait.
	if err := withClient(opts.g, func(*control.Client) error { return nil }); err != nil {
		return err
	}
	var last events.Event // the last event printed
	err := followEvents(ctx, opts.g, func(e events.Event) error {
		// A reconnection replays the history: of the same hermesd (a
		// reader that fell behind), what was printed comes again; of a
		// new one, events after the last printed.
		if e.Kind == 0 || last.Seq != 0 && e.Seq <= last.Seq && !e.Time.After(last.Time) {
			return nil
		}
		last = e
		return print(e)
	}, opts.errOut)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("events: %w", err)
	}
	return nil
}

// eventLine is one event for a human: time, kind, subject, what.
func eventLine(e events.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-19s ", e.Time.Local().Format("15:04:05.000"), e.Kind)
	field := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
	}
	switch e.Kind {
	case events.UnitState:
		field("%s %s → %s", e.Unit, e.From, e.State)
		if e.PID != 0 {
			field(" pid %d", e.PID)
		}
	case events.UnitReady:
		field("%s ready after %s", e.Unit, e.Duration.Round(time.Millisecond))
	case events.UnitRestart:
		field("%s restart #%d, cause %s", e.Unit, e.Restarts, e.Cause)
	case events.Reload:
		field("%s in %s", e.Outcome, e.Duration.Round(time.Millisecond))
		if p := e.Plan; p != nil {
			field(": start %s, stop %s, restart %s, keep %d", list(p.Start), list(p.Stop), list(p.Restart), len(p.Keep))
		}
	case events.ConfigError:
		if fe := e.Error; fe != nil {
			b.WriteString(fe.String())
		}
	case events.Adopted, events.Released:
		field("%s pid %d", e.Unit, e.PID)
	case events.SupervisorRestart:
		field("supervisor %d", e.PID)
	case events.Cut:
		field("%s/%s %s after %s (%s), session %s", e.Provider, e.Model, e.Layer, timeoutWords(e.Value), e.Source, e.Session)
	case events.BreakerTrip, events.BreakerReset:
		field("%s/%s streak %d/%d, session %s", e.Provider, e.Model, e.Streak, e.Threshold, e.Session)
	}
	if e.Reason != "" {
		field(": %s", oneLine(e.Reason))
	}
	return strings.TrimRight(b.String(), " ")
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func timeoutWords(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	return d.Round(time.Millisecond).String()
}

// followEvents calls fn with each event of the daemon's history, then
// with each event as it happens (the history first, so that nothing that
// happens while the caller reads its first status is missed). It
// reconnects after a stream that ended because this reader fell behind,
// or because hermesd restarted: then fn is called with a zero Event, so
// that the caller refreshes what it shows. It returns when ctx ends, or
// with fn's error.
func followEvents(ctx context.Context, g *globals, fn func(events.Event) error, status io.Writer) error {
	wrapped := func(e events.Event) error {
		if err := fn(e); err != nil {
			return fnError{err}
		}
		return nil
	}
	for {
		c, err := dial(g)
		if err == nil {
			err = c.Events(ctx, control.EventOptions{Follow: true}, wrapped)
			c.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if fe, ok := errors.AsType[fnError](err); ok {
			return fe.err
		}
		if err != nil && status != nil {
			fmt.Fprintf(status, "hermesctl: %v; retrying\n", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if err := fn(events.Event{}); err != nil {
			return err
		}
	}
}

// fnError marks an error of followEvents' fn, which ends it.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }
func (e fnError) Unwrap() error { return e.err }
