package proc

import "net/netip"

// Listener is a TCP socket in state LISTEN, as /proc/net/tcp and tcp6 list
// it: those of the network namespace of the process that reads them.
type Listener struct {
	// Addr is the local address it is bound to; an unspecified address
	// (0.0.0.0, ::) is every address of the host.
	Addr netip.AddrPort
	// Inode is the socket's: a process that holds it open has a
	// /proc/PID/fd link to socket:[Inode].
	Inode uint64
}

// Accepting returns those of ls that a connection to ap reaches: the
// listeners bound to ap's address, or when there are none those bound to
// every address (0.0.0.0 for IPv4; [::] for either, as an IPv6 socket not
// set IPV6_V6ONLY takes IPv4 too, which the tables do not say). An
// IPv4-mapped address is its IPv4 address.
func Accepting(ls []Listener, ap netip.AddrPort) []Listener {
	want := ap.Addr().Unmap()
	var exact, every []Listener
	for _, l := range ls {
		if l.Addr.Port() != ap.Port() {
			continue
		}
		switch a := l.Addr.Addr().Unmap(); {
		case a == want:
			exact = append(exact, l)
		case a.IsUnspecified() && (a.Is6() || want.Is4()):
			every = append(every, l)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return every
}
