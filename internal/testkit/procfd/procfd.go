// Package procfd lists the open descriptors of a process and its
// descendants from /proc, for the tests of descriptor hygiene (SPEC §4:
// no child may hold the death pipe's write end; §11): what a child holds is
// what it inherited from its owner.
package procfd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// FD is one open descriptor of a process.
type FD struct {
	Num    int
	Target string // readlink of /proc/PID/fd/NUM: a path, "pipe:[INO]", "socket:[INO]", "anon_inode:[...]"
	Flags  int    // open flags from /proc/PID/fdinfo/NUM; Flags&O_ACCMODE tells a pipe's end
}

// Write reports whether the descriptor is open for writing.
func (f FD) Write() bool { return f.Flags&unix.O_ACCMODE != unix.O_RDONLY }

// CloseOnExec reports whether the descriptor is closed at an exec: one
// without it passes to every program the process runs.
func (f FD) CloseOnExec() bool { return f.Flags&unix.O_CLOEXEC != 0 }

func (f FD) String() string {
	mode := "r"
	switch f.Flags & unix.O_ACCMODE {
	case unix.O_WRONLY:
		mode = "w"
	case unix.O_RDWR:
		mode = "rw"
	}
	return fmt.Sprintf("%d→%s (%s)", f.Num, f.Target, mode)
}

// Descendants returns the live (non-zombie) processes below pid, by parent
// links, children before grandchildren.
func Descendants(pid int) ([]int, error) {
	children := map[int][]int{}
	if _, err := proc.Find(func(s proc.Stat) bool {
		if !s.Zombie() {
			children[s.PPID] = append(children[s.PPID], s.PID)
		}
		return false
	}); err != nil {
		return nil, err
	}
	var out []int
	queue := slices.Clone(children[pid])
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, p)
		queue = append(queue, children[p]...)
	}
	return out, nil
}

// Differences lists how pid's descriptors differ from want, which maps each
// descriptor number pid must hold to a prefix of its target: a descriptor
// missing, one with another target, and every descriptor not in want. An
// extra descriptor is described with the owner's descriptors on the same
// target (owner may be nil): that names what leaked.
func Differences(pid int, want map[int]string, owner []FD) ([]string, error) {
	fds, err := List(pid)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[int]bool{}
	for _, f := range fds {
		seen[f.Num] = true
		w, ok := want[f.Num]
		switch {
		case !ok:
			var also []FD
			for _, o := range owner {
				if o.Target == f.Target {
					also = append(also, o)
				}
			}
			d := fmt.Sprintf("holds %v, want no such descriptor", f)
			if len(also) > 0 {
				d += fmt.Sprintf(" (the owner holds it as %v)", also)
			}
			out = append(out, d)
		case !strings.HasPrefix(f.Target, w):
			out = append(out, fmt.Sprintf("fd %d is %s, want %s", f.Num, f.Target, w))
		}
	}
	nums := slices.Sorted(maps.Keys(want))
	for _, n := range nums {
		if !seen[n] {
			out = append(out, fmt.Sprintf("fd %d is not open, want %s", n, want[n]))
		}
	}
	return out, nil
}

// Settled is Differences once pid's descriptors match want, or after d
// has passed. A program may hold a descriptor for a moment while it starts
// (sleep reads /etc/locale.alias) and the kernel gives no event for that
// moment's end, so this polls; a leaked descriptor stays and is reported.
func Settled(pid int, want map[int]string, owner []FD, d time.Duration) ([]string, error) {
	deadline := time.Now().Add(d)
	for {
		diff, err := Differences(pid, want, owner)
		if err != nil || len(diff) == 0 || time.Now().After(deadline) {
			return diff, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
