package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-units/hermes/proc"
)

// WatchExit returns a channel closed when the process leader exits, for a
// process that is not our child (an adopted leader): it holds an exit file
// (proc.ExitFile: a pidfd on Linux, a kqueue on darwin), so a recycled pid
// never fools it. It fails with proc.ErrGone when leader is
// not alive now. The watch ends (without closing the channel) when ctx ends.
// The watch is a goroutine parked on the exit file in the runtime's netpoller:
// it holds no OS thread while the process lives.
func WatchExit(ctx context.Context, leader proc.Identity) (<-chan struct{}, error) {
	f, err := proc.ExitFile(leader.PID)
	if err != nil {
		if errors.Is(err, proc.ErrNotPollable) || errors.Is(err, errors.ErrUnsupported) {
			return nil, fmt.Errorf("watch %s: %w", leader, err)
		}
		return nil, fmt.Errorf("watch %s: %w", leader, proc.ErrGone)
	}
	if !leader.Alive() { // checked after opening: the exit file names this very process
		f.Close()
		return nil, fmt.Errorf("watch %s: %w", leader, proc.ErrGone)
	}
	out := make(chan struct{})
	// ctx's end wakes the parked read through its deadline.
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	go func() { // ends at the exit or when ctx ends
		defer f.Close()
		defer stop()
		if awaitExit(f, readable) == nil {
			close(out)
		}
	}()
	return out, nil
}
