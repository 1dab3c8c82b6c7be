package proc

import (
	"encoding/binary"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

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

func TestAccepting(t *testing.T) {
	ap := netip.MustParseAddrPort
	local := Listener{ap("127.0.0.1:8080"), 1}
	any4 := Listener{ap("0.0.0.0:8080"), 2}
	any6 := Listener{ap("[::]:8080"), 3}
	mapped := Listener{ap("[::ffff:127.0.0.1]:8080"), 4}
	loop6 := Listener{ap("[::1]:8080"), 5}
	other := Listener{ap("127.0.0.1:9090"), 6}
	for _, tc := range []struct {
		name string
		ls   []Listener
		to   string
		want []Listener
	}{
		{"bound to the address, before every address", []Listener{any4, local, other}, "127.0.0.1:8080", []Listener{local}},
		{"every IPv4 address", []Listener{any4, other}, "127.0.0.1:8080", []Listener{any4}},
		{"[::] takes IPv4 too", []Listener{any6}, "127.0.0.1:8080", []Listener{any6}},
		{"IPv4-mapped is its IPv4 address", []Listener{any4, mapped}, "127.0.0.1:8080", []Listener{mapped}},
		{"0.0.0.0 takes no IPv6", []Listener{any4, any6}, "[::1]:8080", []Listener{any6}},
		{"IPv6 loopback", []Listener{any6, loop6}, "[::1]:8080", []Listener{loop6}},
		{"another address only", []Listener{local}, "10.0.0.1:8080", nil},
		{"another port only", []Listener{other}, "127.0.0.1:8080", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Accepting(tc.ls, ap(tc.to)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
