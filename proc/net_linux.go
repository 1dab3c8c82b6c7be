package proc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Listeners lists the listening TCP sockets, IPv4 then IPv6. A kernel
// without IPv6 has no tcp6 table: that is no error.
func Listeners() ([]Listener, error) {
	var out []Listener
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(Root + "/net/" + name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ls, err := parseNetTCP(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s/net/%s: %w", Root, name, err)
		}
		out = append(out, ls...)
	}
	return out, nil
}

// SocketInodes lists the inodes of the sockets pid holds open, from its
// /proc/PID/fd links (socket:[N]). Another user's descriptors need
// privilege to read: the error then wraps os.ErrPermission. A process
// that does not exist is ErrGone; a descriptor closed during the read is
// skipped.
func SocketInodes(pid int) ([]uint64, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	dir := Root + "/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, gone(pid, err)
	}
	var out []uint64
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		if n, ok := socketInode(l); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// SocketHolder returns a process that holds one of inodes open, reading
// every /proc/PID/fd this process may read; 0 when none it can see does:
// the holder is another user's process, or no process (a kernel socket).
func SocketHolder(inodes ...uint64) int {
	pids, err := Pids()
	if err != nil {
		return 0
	}
	for _, pid := range pids {
		held, err := SocketInodes(pid)
		if err != nil {
			continue
		}
		for _, n := range held {
			if slices.Contains(inodes, n) {
				return pid
			}
		}
	}
	return 0
}

// socketInode is the inode of a descriptor link "socket:[N]".
func socketInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
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
