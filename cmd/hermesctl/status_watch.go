package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hermes-units/hermes/events"
)

// clearScreen moves the cursor home and clears the screen (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// watchStatus draws the status table, then draws it again after each burst
// of events (the events of one burst are drawn once: a reload that
// restarts ten units is one redraw, not ten). On a terminal each drawing
// replaces the last; otherwise drawings follow each other, separated by a
// blank line. It draws the units of opts (all when none are named) on
// opts.out, and says on opts.errOut when it follows the events again. It
// returns when ctx ends, or with the first error of status.
func watchStatus(ctx context.Context, opts *statusOptions) error {
	g, out, units := opts.g, opts.out, opts.units
	c, err := dial(g)
	if err != nil {
		return err
	}
	defer c.Close()
	color := colorFor(out)
	changed := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan error, 1)
	go func() {
		followed <- followEvents(ctx, g, func(events.Event) error {
			select {
			case changed <- struct{}{}:
			default:
			}
			return nil
		}, opts.errOut)
	}()
	// followed holds one value; whoever takes it (the loop below, when the
	// stream ends first) leaves nothing for a second receive, so the wait
	// at return reads it only if the loop has not.
	var followErr error
	gotFollow := false
	defer func() {
		cancel()
		if !gotFollow {
			<-followed
		}
	}()
	for n := 0; ; n++ {
		st, err := c.Status(ctx, units...)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("status: %w", err)
		}
		switch {
		case color:
			fmt.Fprint(out, clearScreen)
		case n > 0:
			fmt.Fprintln(out)
		}
		writeStatus(out, st, opts.look(time.Now()))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case followErr = <-followed:
			gotFollow = true
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return followErr
		case <-changed:
		}
	}
}
