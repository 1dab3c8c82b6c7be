package proc

import "time"

// Usage is what some processes use at one moment: memory, and the CPU
// time they have had.
type Usage struct {
	Memory int64         // bytes
	CPU    time.Duration // user + system
}

// Snapshot is one reading of the process table's resource use: every
// process read once (on Linux its /proc/PID/stat, which holds the CPU
// times and the resident set), so that the use of any number of process
// groups costs one pass over the table, not one per group. Read it with
// ReadSnapshot; it does not change afterwards.
type Snapshot struct {
	pgid   map[int]int   // by pid
	procs  map[int]Usage // by pid
	groups map[int]Usage // by pgid
}

func (u *Usage) add(v Usage) {
	u.Memory += v.Memory
	u.CPU += v.CPU
}

// Group is the use of the members of process group pgid at the reading:
// the sum of their resident sets (a page two of them share counts twice)
// and of their CPU times, each with its waited-for children's. The time
// of a member that exited is lost, unless a member waited for it: a
// process re-parented to a subreaper (hermesd) takes its time along.
// A pgid ≤ 0 names no group: the zero Usage.
func (s *Snapshot) Group(pgid int) Usage {
	if pgid <= 0 {
		return Usage{}
	}
	return s.groups[pgid]
}

// PGID is the process group pid was in at the reading; ok is false when
// pid was not in the table.
func (s *Snapshot) PGID(pid int) (pgid int, ok bool) {
	pgid, ok = s.pgid[pid]
	return pgid, ok
}

// Processes is the use of pids at the reading, summed as Group sums; a
// pid not in the table counts nothing.
func (s *Snapshot) Processes(pids []int) Usage {
	var u Usage
	for _, pid := range pids {
		u.add(s.procs[pid])
	}
	return u
}
