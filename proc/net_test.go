package proc

import (
	"net/netip"
	"reflect"
	"testing"
)

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
