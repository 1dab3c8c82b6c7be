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
