package proc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

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

// parseNetTCP reads a /proc/net/tcp or tcp6 table and returns the sockets
// in state LISTEN (0A). Rows it cannot read are skipped.
func parseNetTCP(r io.Reader) ([]Listener, error) {
	var out []Listener
	sc := bufio.NewScanner(r)
	for first := true; sc.Scan(); first = false {
		if first { // the header
			continue
		}
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		addr, err := parseSockAddr(f[1])
		if err != nil {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Listener{Addr: addr, Inode: inode})
	}
	return out, sc.Err()
}

// parseSockAddr parses an address of /proc/net/tcp{,6}: the address in
// hex as 32-bit words, each printed as the host's byte order reads it
// (the network-order bytes of 127.0.0.1 print as 0100007F on a
// little-endian host), a colon, and the port in hex.
func parseSockAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(a) != 8 && len(a) != 32 {
		return netip.AddrPort{}, fmt.Errorf("address %q: want 8 or 32 hex digits, a colon and a port", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: port: %w", s, err)
	}
	b := make([]byte, len(a)/2)
	for i := 0; i < len(a); i += 8 {
		w, err := strconv.ParseUint(a[i:i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q: %w", s, err)
		}
		binary.NativeEndian.PutUint32(b[i/2:], uint32(w))
	}
	ip, ok := netip.AddrFromSlice(b)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q: %s is no IP address", s, hex.EncodeToString(b))
	}
	return netip.AddrPortFrom(ip, uint16(port)), nil
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
