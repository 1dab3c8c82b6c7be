package proc

import (
	"errors"
	"fmt"
	"os"
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
			for _, want := range inodes {
				if n == want {
					return pid
				}
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
