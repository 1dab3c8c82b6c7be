package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes-units/hermes/proc"
)

// ErrPortHeld reports that a port a unit declares is already listened on.
var ErrPortHeld = errors.New("port is already in use")

// PortError names the holder of a port a unit needs.
type PortError struct {
	Unit    string
	Port    int
	PID     int    // 0 when no process of ours could be found holding it
	Command string // the holder's argv, space-joined
	// From the ledger, when the holder belongs to a recorded group.
	HolderUnit  string
	Owner       proc.Identity
	OwnerAlive  bool
	InLedger    bool
	HolderGroup int // the holder's pgid
}

func (e *PortError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unit %s: port %d is already in use", e.Unit, e.Port)
	if e.PID == 0 {
		b.WriteString(" (holder not visible: another user's process or a kernel socket); free it, or change ports:")
		return b.String()
	}
	fmt.Fprintf(&b, " by pid %d (%s)", e.PID, e.Command)
	if e.InLedger {
		state := "alive"
		if !e.OwnerAlive {
			state = "dead"
		}
		fmt.Fprintf(&b, ", started by unit %s of owner pid %d (%s)", e.HolderUnit, e.Owner.PID, state)
	}
	fmt.Fprintf(&b, "; take it over with `hermesctl adopt --pgid %d --as %s`, or stop it", e.HolderGroup, e.Unit)
	return b.String()
}

func (e *PortError) Unwrap() error { return ErrPortHeld }

// portInodes returns the inodes of the sockets listening on port, at any
// address.
func portInodes(port int) ([]uint64, error) {
	ls, err := proc.Listeners()
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, l := range ls {
		if int(l.Addr.Port()) == port {
			out = append(out, l.Inode)
		}
	}
	return out, nil
}

// checkPorts returns a *PortError for the first declared port that is held,
// naming its holder, or nil when all are free.
func checkPorts(ctx context.Context, unit string, ports []int, cp Checkpoint) error {
	for _, port := range ports {
		inodes, err := portInodes(port)
		if errors.Is(err, errors.ErrUnsupported) {
			// No socket tables on this platform (darwin): a bind tells
			// whether the port is free, not who holds it.
			if held, err := bindHeld(port); err != nil {
				return fmt.Errorf("unit %s: check port %d: %w", unit, port, err)
			} else if held {
				return &PortError{Unit: unit, Port: port}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("unit %s: check port %d: %w", unit, port, err)
		}
		if len(inodes) == 0 {
			continue
		}
		pe := &PortError{Unit: unit, Port: port}
		if pid := proc.SocketHolder(inodes...); pid > 0 {
			pe.PID = pid
			if argv, err := proc.Cmdline(pid); err == nil {
				pe.Command = strings.Join(argv, " ")
			}
			if st, err := proc.ReadStat(pid); err == nil {
				pe.HolderGroup = st.PGID
			}
			if cp != nil {
				if s, ok, err := cp.Who(ctx, pid); err == nil && ok {
					pe.InLedger, pe.HolderUnit, pe.Owner, pe.OwnerAlive = true, s.Unit, s.Owner, s.OwnerAlive
				}
			}
		}
		return pe
	}
	return nil
}

// bindHeld reports whether a listener at port is refused with EADDRINUSE
// on the wildcard or loopback address of IPv4 or IPv6: the port is held.
// Each is tried, as a listener bound to one address does not stop a bind
// to another where SO_REUSEADDR is set (Go sets it; BSD kernels then allow
// it); a holder bound to another address alone is not seen. An address the
// host lacks (no IPv6) is skipped. Each probe is closed at once.
func bindHeld(port int) (bool, error) {
	for _, host := range []string{"0.0.0.0", "127.0.0.1", "::", "::1"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			return true, nil
		case errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT):
			continue
		case err != nil:
			return false, err
		}
		if err := ln.Close(); err != nil {
			return false, err
		}
	}
	return false, nil
}
