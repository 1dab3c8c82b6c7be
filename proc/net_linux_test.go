package proc

import (
	"errors"
	"net"
	"os"
	"slices"
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
