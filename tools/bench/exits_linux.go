package main

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// exitSet holds a pidfd for each process of a set, opened before the
// clock starts, so that the end of the clock is the kernel's exit event of
// the last process, not a poll's granularity. A pidfd is readable once its
// process has exited (a zombie counts as exited: it runs nothing).
type exitSet struct {
	fds []int
}

// openExits opens a pidfd for each pid. A pid already gone is an error:
// the set would not measure what it says.
func openExits(pids []int) (*exitSet, error) {
	s := &exitSet{}
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("pidfd of %d: %w", pid, err)
		}
		s.fds = append(s.fds, fd)
	}
	return s, nil
}

// wait blocks until every process has exited or timeout passes; it
// returns how many are still running.
func (s *exitSet) wait(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	left := make([]unix.PollFd, len(s.fds))
	for i, fd := range s.fds {
		left[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for len(left) > 0 {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return len(left), nil
		}
		n, err := unix.Poll(left, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return len(left), err
		}
		if n == 0 {
			continue
		}
		rest := left[:0]
		for _, p := range left {
			if p.Revents == 0 {
				p.Revents = 0
				rest = append(rest, p)
			}
		}
		left = rest
	}
	return 0, nil
}

// kill sends SIGKILL to every process of the set still running, through
// its pidfd (which cannot name a reused pid).
func (s *exitSet) kill() {
	for _, fd := range s.fds {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

func (s *exitSet) close() {
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.fds = nil
}
