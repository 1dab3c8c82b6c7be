package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hermes-units/hermes/proc"
)

// Alive reports whether the entry's group still has a member:
//   - its leader identity is alive (same pid, start time and boot); else
//   - its cgroup directory, if it has one, still holds processes; else
//   - its pgid still has members, and no live process has pid == pgid with a
//     start time other than the recorded leader's. Such a process means the
//     group id was recycled by a stranger, and the entry is dead.
//
// An entry recorded in another boot is never alive. Alive reads /proc and
// the cgroup filesystem; it takes no lock.
func (e Entry) Alive() bool {
	return e.alive(liveProbe{})
}

// probe answers the questions Alive asks of the system. liveProbe asks the
// kernel each time; scanProbe answers group questions from one /proc scan.
type probe interface {
	groupHasMembers(pgid int) bool
	stat(pid int) (proc.Stat, error)
}

func (e Entry) alive(p probe) bool {
	boot, err := proc.BootID()
	if err == nil && e.Leader.BootID != "" && e.Leader.BootID != boot {
		return false
	}
	if e.Leader.Alive() {
		return true
	}
	if e.Cgroup != "" && cgroupPopulated(e.Cgroup) {
		return true
	}
	if e.PGID <= 1 || noGroup(e.PGID) || !p.groupHasMembers(e.PGID) {
		return false
	}
	st, err := p.stat(e.PGID)
	if err != nil {
		return true // no process holds the group's id: the members are the group's own
	}
	if e.Leader.PID == e.PGID && st.StartTime != e.Leader.StartTime {
		return false // recycled group id
	}
	return true
}

// noGroup reports whether no process at all, not even a zombie, is in
// process group pgid: one kill(2) of signal 0, where the probe's answer may
// cost a read of the whole process table (scanProbe's first question, and
// proc.GroupMembers). The usual dead entry, a group that ended and was
// reaped (the removals a clean stop writes), is then judged without one.
func noGroup(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

type liveProbe struct{}

func (liveProbe) groupHasMembers(pgid int) bool {
	m, err := proc.GroupMembers(pgid)
	return err == nil && len(m) > 0
}

func (liveProbe) stat(pid int) (proc.Stat, error) { return proc.ReadStat(pid) }

// scanProbe scans /proc once, at the first group question, and answers every
// later one from that scan: pruning a ledger of many dead entries then costs
// one scan, not one per entry.
type scanProbe struct {
	done    bool
	members map[int]int // pgid → live (non-zombie) members
	stats   map[int]proc.Stat
}

func (s *scanProbe) scan() {
	if s.done {
		return
	}
	s.done = true
	s.members = map[int]int{}
	s.stats = map[int]proc.Stat{}
	pids, err := proc.Pids()
	if err != nil {
		return
	}
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil {
			continue
		}
		s.stats[pid] = st
		if !st.Zombie() {
			s.members[st.PGID]++
		}
	}
}

func (s *scanProbe) groupHasMembers(pgid int) bool {
	s.scan()
	return s.members[pgid] > 0
}

func (s *scanProbe) stat(pid int) (proc.Stat, error) {
	s.scan()
	st, ok := s.stats[pid]
	if !ok {
		return proc.Stat{}, proc.ErrGone
	}
	return st, nil
}

// prune returns the entries that are alive, in a new slice: entries is
// what an Update's fn returned, which may be the caller's own. Entries
// sharing a leader, pgid and cgroup are judged once.
func prune(entries []Entry) []Entry {
	type key struct {
		leader proc.Identity
		pgid   int
		cgroup string
	}
	seen := map[key]bool{}
	p := &scanProbe{}
	out := make([]Entry, 0, len(entries))
	var last key
	lastAlive, haveLast := false, false
	for _, e := range entries {
		k := key{e.Leader, e.PGID, e.Cgroup}
		alive := lastAlive
		if !haveLast || k != last { // neighbours often share a leader
			var ok bool
			if alive, ok = seen[k]; !ok {
				alive = e.alive(p)
				seen[k] = alive
			}
			last, lastAlive, haveLast = k, alive, true
		}
		if alive {
			out = append(out, e)
		}
	}
	return out
}

// cgroupPopulated reports whether the cgroup directory holds a process, in
// it or in a descendant. cgroup.events says so in one read; cgroup.procs is
// the fallback.
func cgroupPopulated(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.events")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("populated ")); ok {
				return string(v) == "1"
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && len(bytes.TrimSpace(b)) > 0
}
