package supervisor

import (
	"context"
	"fmt"

	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// WatchExit returns a channel closed when the process leader exits, for a
// process that is not our child (an adopted leader): it holds a pidfd, so a
// recycled pid never fools it. It fails with proc.ErrGone when leader is
// not alive now. The watch ends (without closing the channel) when ctx ends.
func WatchExit(ctx context.Context, leader proc.Identity) (<-chan struct{}, error) {
	fd, err := unix.PidfdOpen(leader.PID, 0)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", leader, proc.ErrGone)
	}
	if !leader.Alive() { // checked after opening: the pidfd names this very process
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", leader, proc.ErrGone)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", leader, err)
	}
	out := make(chan struct{})
	woke := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { unix.Write(p[1], []byte{0}); close(woke) })
	go func() { // ends at the exit or when ctx ends
		defer unix.Close(fd)
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		defer func() {
			if !stop() {
				<-woke // the wake-up write has finished before p[1] closes
			}
		}()
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(p[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if fds[0].Revents != 0 {
				close(out)
			}
			return
		}
	}()
	return out, nil
}
