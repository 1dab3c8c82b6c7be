package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// ErrNoLogReader reports a log readiness probe with no log follower wired.
var ErrNoLogReader = errors.New("log readiness probe: no log reader configured")

// probe waits until the unit is ready by rd's tcp, http or log rule. It
// returns nil when ready, ctx's error when the run ended first, or an error
// that makes the probe itself impossible (a bad regexp). The start timeout
// bounds it from outside. A tcp connection, the tcp probe's or one an http
// probe's request goes over, counts only when own (if not nil) accepts the
// listener it reached (see listenerCheck.dial).
func probe(ctx context.Context, rd units.Ready, logPath string, offset int64,
	lines func(context.Context, string, int64) (<-chan string, error), own *listenerCheck) error {
	switch {
	case rd.TCP != "":
		return poll(ctx, func(ctx context.Context) bool {
			c, err := own.dial(ctx, "tcp", rd.TCP)
			if err != nil {
				return false
			}
			c.Close()
			return true
		})
	case rd.HTTP != "":
		// A connection of its own for every request (no keep-alive: the
		// listener is judged at each poll), and never through a proxy named
		// in the environment: the probe asks the unit, not a proxy.
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			DialContext:       own.dial,
			DisableKeepAlives: true,
		}}
		defer client.CloseIdleConnections()
		return poll(ctx, func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, rd.HTTP, nil)
			if err != nil {
				return false
			}
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode >= 200 && resp.StatusCode < 300
		})
	case rd.Log != "":
		re, err := regexp.Compile(rd.Log)
		if err != nil {
			return fmt.Errorf("log readiness regexp: %w", err)
		}
		if lines == nil {
			return ErrNoLogReader
		}
		ctx, cancel := context.WithCancel(ctx) // ends the follower once matched
		defer cancel()
		ch, err := lines(ctx, logPath, offset)
		if err != nil {
			return fmt.Errorf("follow %s: %w", logPath, err)
		}
		for l := range ch {
			// An owned unit's lines are records (logfile.Copy): the
			// pattern sees the text the program printed.
			if re.MatchString(logfile.ParseRecord(l).Text) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("log %s ended before a line matched %q", logPath, rd.Log)
	}
	return nil
}

// poll calls ok every probeInterval until it reports true or ctx ends.
func poll(ctx context.Context, ok func(context.Context) bool) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if ok(ctx) {
			return nil
		}
		t.Reset(probeInterval)
	}
}

// startTimeout is the error of u's start timeout, with why its tcp probe
// did not count the listener it reached, if that is why.
func startTimeout(u *unit) error {
	if l := u.run.listener; l != nil {
		return fmt.Errorf("%w (%s): %w", ErrStartTimeout, u.spec.Timeouts.Start, l)
	}
	return fmt.Errorf("%w (%s)", ErrStartTimeout, u.spec.Timeouts.Start)
}

// ListenerError reports that a tcp readiness probe reached a listener held
// by a process that is not one of the unit's: it does not make the unit
// ready.
type ListenerError struct {
	Port    int
	PID     int    // the holder
	Command string // its name (comm)
}

func (e *ListenerError) Error() string {
	return fmt.Sprintf("port %d is held by pid %d (%s), not by this unit", e.Port, e.PID, e.Command)
}

// listenerCheck tells whether a tcp probe's connection reached one of the
// unit's own listening sockets: the listener the kernel shows for the
// address (proc.Accepting) is held open by one of the unit's processes.
// Where the kernel does not let us see that, the connection counts, as
// it did before there was a check: the address has no listener in this
// network namespace's tables (another host, a forwarded port), a member's
// descriptors cannot be read (another user's process, and hermesd
// without privilege over it), or no process we can see holds the
// listener (another user's, or a kernel socket). Only a holder seen to be
// outside the unit makes the connection not count. Its methods run on
// the probe's goroutine; a nil *listenerCheck accepts every connection.
type listenerCheck struct {
	members func() []int         // the unit's live processes
	note    func(*ListenerError) // told of each change of verdict (nil: none held by another)
	inodes  []uint64             // the listeners the last verdict is about, sorted
	last    *ListenerError       // the last verdict
}

// dial connects to addr for a probe (the tcp probe, or the transport of
// the http probe's requests) and returns the connection only when it
// counts: when the listener it reached is the unit's (reached); otherwise
// it closes it and returns the verdict, a *ListenerError. A nil c
// accepts every connection.
func (c *listenerCheck) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		c.refused()
		return nil, err
	}
	if to, ok := conn.RemoteAddr().(*net.TCPAddr); ok && !c.reached(to.AddrPort()) {
		conn.Close()
		return nil, c.last
	}
	return conn, nil
}

// reached reports whether a connection to to counts.
func (c *listenerCheck) reached(to netip.AddrPort) bool {
	if c == nil {
		return true
	}
	c.tell(c.judge(to))
	return c.last == nil
}

// refused clears the verdict once nothing listens any more.
func (c *listenerCheck) refused() {
	if c != nil {
		c.tell(nil)
	}
}

func (c *listenerCheck) tell(v *ListenerError) {
	if (v == nil) != (c.last == nil) || v != nil && *v != *c.last {
		c.note(v)
	}
	c.last = v
	if v == nil {
		c.inodes = nil
	}
}

// judge is the verdict on the listeners a connection to to reaches: nil
// unless a process seen to be outside the unit holds them. A stranger's
// verdict is kept while the same sockets listen and their holder is still
// not among the members (no scan of every process's descriptors at each
// poll): a daemon whose setsid came between a scan and the listing is
// found by a later scan, and is then the unit's.
func (c *listenerCheck) judge(to netip.AddrPort) *ListenerError {
	ls, err := proc.Listeners()
	if err != nil {
		return nil
	}
	var inodes []uint64
	for _, l := range proc.Accepting(ls, to) {
		inodes = append(inodes, l.Inode)
	}
	slices.Sort(inodes)
	if len(inodes) == 0 {
		return nil
	}
	members := c.members()
	if c.last != nil && slices.Equal(inodes, c.inodes) && !slices.Contains(members, c.last.PID) {
		return c.last
	}
	c.inodes = inodes
	for _, pid := range members {
		held, err := proc.SocketInodes(pid)
		if errors.Is(err, os.ErrPermission) {
			return nil
		}
		for _, n := range held {
			if _, ok := slices.BinarySearch(inodes, n); ok {
				return nil
			}
		}
	}
	pid := proc.SocketHolder(inodes...)
	if pid == 0 || slices.Contains(members, pid) {
		return nil
	}
	e := &ListenerError{Port: int(to.Port()), PID: pid, Command: "?"}
	if st, err := proc.ReadStat(pid); err == nil {
		e.Command = st.Comm
	}
	return e
}
