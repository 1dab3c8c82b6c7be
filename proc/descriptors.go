package proc

import (
	"os"
	"strconv"
)

// numbers lists the entries of dir named by a number, as numbers: a
// directory of descriptors (/proc/self/fd, /dev/fd), or /proc's pids.
func numbers(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fds := make([]int, 0, len(ents))
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}
