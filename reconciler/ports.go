package reconciler

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// listener is one listening socket from /proc/net/tcp{,6}.
type listener struct {
	Port  int
	Inode uint64
}

// parseNetTCP reads a /proc/net/tcp or tcp6 table and returns the sockets in
// state LISTEN (0A).
func parseNetTCP(r io.Reader) ([]listener, error) {
	var out []listener
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		port, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, listener{Port: int(port), Inode: inode})
	}
	return out, sc.Err()
}

// portInodes returns the inodes of the sockets listening on port.
func portInodes(port int) ([]uint64, error) {
	var out []uint64
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(proc.Root, "net", name))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		ls, err := parseNetTCP(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if l.Port == port {
				out = append(out, l.Inode)
			}
		}
	}
	return out, nil
}

// socketOwner finds a process that has one of the socket inodes open, by
// reading /proc/*/fd. It returns 0 when none is visible.
func socketOwner(inodes []uint64) int {
	want := map[string]bool{}
	for _, in := range inodes {
		want["socket:["+strconv.FormatUint(in, 10)+"]"] = true
	}
	pids, err := proc.Pids()
	if err != nil {
		return 0
	}
	for _, pid := range pids {
		dir := filepath.Join(proc.Root, strconv.Itoa(pid), "fd")
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && want[l] {
				return pid
			}
		}
	}
	return 0
}

// checkPorts returns a *PortError for the first declared port that is held,
// naming its holder, or nil when all are free.
func checkPorts(ctx context.Context, unit string, ports []int, cp Checkpoint) error {
	for _, port := range ports {
		inodes, err := portInodes(port)
		if err != nil {
			return fmt.Errorf("unit %s: check port %d: %w", unit, port, err)
		}
		if len(inodes) == 0 {
			continue
		}
		pe := &PortError{Unit: unit, Port: port}
		if pid := socketOwner(inodes); pid > 0 {
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
