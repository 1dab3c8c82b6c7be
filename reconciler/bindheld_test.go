package reconciler

import (
	"net"
	"testing"
)

// TestBindHeld: the port check of platforms without socket tables sees a
// port held on loopback, and free once it is closed.
func TestBindHeld(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if held, err := bindHeld(port); err != nil || !held {
		t.Errorf("bindHeld(%d) with a listener on 127.0.0.1: got %v, %v; want true", port, held, err)
	}
	ln.Close()
	if held, err := bindHeld(port); err != nil || held {
		t.Errorf("bindHeld(%d) once closed: got %v, %v; want false", port, held, err)
	}
}
