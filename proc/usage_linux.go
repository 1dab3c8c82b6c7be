package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ReadSnapshot reads every process's /proc/PID/stat once. Processes that
// exit during the pass are left out.
func ReadSnapshot() (*Snapshot, error) {
	pids, err := Pids()
	if err != nil {
		return nil, err
	}
	stats := make([]Stat, 0, len(pids))
	for _, pid := range pids {
		if st, err := ReadStat(pid); err == nil {
			stats = append(stats, st)
		}
	}
	return snapshotOf(stats), nil
}

// snapshotOf sums stats by process group. A process's CPU time counts the
// children it waited for (a shell's commands, a server's finished
// workers), so that their time is not lost when they are reaped.
func snapshotOf(stats []Stat) *Snapshot {
	s := &Snapshot{pgid: make(map[int]int, len(stats)), procs: make(map[int]Usage, len(stats)), groups: map[int]Usage{}}
	for _, st := range stats {
		u := Usage{Memory: st.RSS, CPU: ticks(st.CPU + st.ChildCPU)}
		s.pgid[st.PID], s.procs[st.PID] = st.PGID, u
		g := s.groups[st.PGID]
		g.add(u)
		s.groups[st.PGID] = g
	}
	return s
}

// ticks converts clock ticks (USER_HZ) to a duration.
func ticks(n uint64) time.Duration { return time.Duration(n) * (time.Second / ClockTicks) }

// CgroupUsage is the use of the cgroup v2 directory dir (absolute) and
// of the cgroups below it, as the kernel counts it: CPU is cpu.stat's
// usage_usec (every cgroup has it, its processes that exited included),
// Memory is memory.current (page cache and kernel memory included). Only
// a cgroup whose parent enables the memory controller has memory.current:
// without it, memory is false and Memory 0, and a caller sums the
// resident sets of CgroupProcs instead.
func CgroupUsage(dir string) (u Usage, memory bool, err error) {
	var buf [512]byte
	b, err := readSmall(filepath.Join(dir, "cpu.stat"), buf[:0])
	if err != nil {
		return Usage{}, false, err
	}
	usec, ok := statField(b, "usage_usec")
	if !ok {
		return Usage{}, false, fmt.Errorf("%s: no usage_usec", filepath.Join(dir, "cpu.stat"))
	}
	u.CPU = time.Duration(usec) * time.Microsecond
	b, err = readSmall(filepath.Join(dir, "memory.current"), buf[:0])
	switch {
	case errors.Is(err, os.ErrNotExist):
		return u, false, nil
	case err != nil:
		return Usage{}, false, err
	}
	if u.Memory, err = strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err != nil {
		return Usage{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.current"), err)
	}
	return u, true, nil
}

// statField is the value of the line "key N" of a flat keyed file
// (cpu.stat).
func statField(b []byte, key string) (int64, bool) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{' '})
		if ok && string(k) == key {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// CgroupProcs lists the processes of the cgroup v2 directory dir
// (cgroup.procs; not those of the cgroups below it).
func CgroupProcs(dir string) ([]int, error) {
	b, err := readSmall(filepath.Join(dir, "cgroup.procs"), make([]byte, 0, 512))
	if err != nil {
		return nil, err
	}
	var pids []int
	for f := range bytes.FieldsSeq(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
