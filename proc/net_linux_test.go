package proc

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestListenersAndHolder: a socket this process listens on is listed, its
// inode is among this process's sockets, and this process is its holder.
func TestListenersAndHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	ls, err := Listeners()
	if err != nil {
		t.Fatal(err)
	}
	found := Accepting(ls, addr)
	if len(found) != 1 {
		t.Fatalf("listeners reaching %v: got %v, want one", addr, found)
	}
	held, err := SocketInodes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(held, found[0].Inode) {
		t.Errorf("own sockets %v lack the listener's inode %d", held, found[0].Inode)
	}
	if got := SocketHolder(found[0].Inode); got != os.Getpid() {
		t.Errorf("holder of inode %d: got pid %d, want %d (this process)", found[0].Inode, got, os.Getpid())
	}
	if got := SocketHolder(0); got != 0 {
		t.Errorf("holder of no socket: got pid %d, want 0", got)
	}
}

func TestSocketInodesRefused(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		if _, err := SocketInodes(0); !errors.Is(err, ErrGone) {
			t.Errorf("pid 0: got %v, want ErrGone", err)
		}
		pid := reapedPID(t)
		if _, err := SocketInodes(pid); !errors.Is(err, ErrGone) {
			t.Errorf("exited pid %d: got %v, want ErrGone", pid, err)
		}
	})
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads every process's descriptors")
		}
		if _, err := SocketInodes(1); !errors.Is(err, os.ErrPermission) {
			t.Errorf("pid 1 (init, root's): got %v, want a permission error", err)
		}
	})
}

// netTCP and netTCP6 are tables as a little-endian kernel prints them.
const netTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1001 1 0000000000000000 100 0 0 10 0
   1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 1003 1 0000000000000000 20 4 30 10 -1
   3: garbage
`

const netTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2003 1 0000000000000000 100 0 0 10 0
`

func littleEndian(t *testing.T) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the tables are as a little-endian kernel prints them")
	}
}

func TestParseNetTCP(t *testing.T) {
	littleEndian(t)
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		name, table string
		want        []Listener
	}{
		{"tcp: listeners only, bad rows skipped", netTCP, []Listener{
			{ap("127.0.0.1:8080"), 1001},
			{ap("0.0.0.0:80"), 1002},
		}},
		{"tcp6", netTCP6, []Listener{
			{ap("[::]:8080"), 2001},
			{ap("[::1]:80"), 2002},
			{ap("[::ffff:127.0.0.1]:8081"), 2003},
		}},
		{"header only", "  sl  local_address\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNetTCP(strings.NewReader(tc.table))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzParseNetTCP(f *testing.F) {
	f.Add(netTCP)
	f.Add(netTCP6)
	f.Fuzz(func(t *testing.T, table string) {
		ls, err := parseNetTCP(strings.NewReader(table))
		if err != nil {
			return
		}
		for _, l := range ls {
			if !l.Addr.IsValid() {
				t.Errorf("listener %v: invalid address from %q", l, table)
			}
		}
	})
}
