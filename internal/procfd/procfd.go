// Package procfd lists the open descriptors of a process and its
// descendants from /proc, for the tests of descriptor hygiene (SPEC §4:
// no child may hold the death pipe's write end; §11): what a child holds is
// what it inherited from its owner.
package procfd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/proc"
)

// FD is one open descriptor of a process.
type FD struct {
	Num    int
	Target string // readlink of /proc/PID/fd/NUM: a path, "pipe:[INO]", "socket:[INO]", "anon_inode:[...]"
	Flags  int    // open flags from /proc/PID/fdinfo/NUM; Flags&O_ACCMODE tells a pipe's end
}

// Write reports whether the descriptor is open for writing.
func (f FD) Write() bool { return f.Flags&0o3 != 0 } // O_WRONLY or O_RDWR

func (f FD) String() string {
	mode := "r"
	switch f.Flags & 0o3 {
	case 1:
		mode = "w"
	case 2:
		mode = "rw"
	}
	return fmt.Sprintf("%d→%s (%s)", f.Num, f.Target, mode)
}

// List returns pid's open descriptors in order. A descriptor closed while
// it is listed is left out; a process that is gone is an error wrapping
// proc.ErrGone.
func List(pid int) ([]FD, error) {
	dir := fmt.Sprintf("%s/%d/fd", proc.Root, pid)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("descriptors of pid %d: %w", pid, proc.ErrGone)
	}
	if err != nil {
		return nil, fmt.Errorf("descriptors of pid %d: %w", pid, err)
	}
	var out []FD
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(dir + "/" + e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // closed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("descriptor %d of pid %d: %w", n, pid, err)
		}
		fd := FD{Num: n, Target: target}
		if b, err := os.ReadFile(fmt.Sprintf("%s/%d/fdinfo/%d", proc.Root, pid, n)); err == nil {
			fd.Flags = parseFlags(string(b))
		}
		out = append(out, fd)
	}
	slices.SortFunc(out, func(a, b FD) int { return a.Num - b.Num })
	return out, nil
}

// parseFlags reads the octal "flags:" line of an fdinfo file.
func parseFlags(info string) int {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			return int(n)
		}
	}
	return 0
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
