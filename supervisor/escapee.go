package supervisor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// scan (pgroup mode) finds escapees and reaps the orphans the owner, as a
// child subreaper, inherited from its groups.
//
// An escapee is a live process outside every registered group that was
// re-parented to the owner, or whose parent is a member of a registered
// group or an escapee, and whose environment carries this owner's tag
// (EnvOwner) and the spawn key (EnvSpawn) of a registered group. Its process
// group is registered under that spawn, so it dies with the owner and keeps
// the spawn registered until it is empty.
//
// Reaping: only zombies whose parent is the owner, that sit in a registered
// group (or are identified escapees), and that are not the leader of one of
// our spawns (os/exec's Cmd.Wait reaps those). Any other child of the owner
// may belong to an exec.Cmd elsewhere in the process and is never touched.
func (o *Owner) scan() {
	o.mu.Lock()
	known := map[int]bool{}
	keys := map[string]*reg{}
	leaders := make(map[int]bool, len(o.leaders))
	for pid := range o.leaders {
		leaders[pid] = true
	}
	escPids := make(map[int]bool, len(o.escPids))
	for pid := range o.escPids {
		escPids[pid] = true
	}
	for _, r := range o.regs {
		known[r.g.PGID] = true
		for _, e := range r.esc {
			known[e.g.PGID] = true
		}
		if r.key != "" {
			keys[r.key] = r
		}
	}
	o.mu.Unlock()
	pids, err := proc.Pids()
	if err != nil {
		return
	}
	stats := make([]proc.Stat, 0, len(pids))
	member := map[int]bool{}
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil {
			continue
		}
		stats = append(stats, st)
		if known[st.PGID] {
			member[pid] = true
		}
	}
	me := o.self.PID
	for _, st := range stats {
		if st.Zombie() {
			if st.PPID == me && !leaders[st.PID] && (known[st.PGID] || escPids[st.PID]) {
				var ws unix.WaitStatus
				unix.Wait4(st.PID, &ws, unix.WNOHANG, nil)
			}
			continue
		}
		if known[st.PGID] || st.PGID <= 1 || st.PGID == o.pgid {
			continue
		}
		if !(st.PPID == me && !leaders[st.PID] || member[st.PPID] || escPids[st.PPID]) {
			continue
		}
		env, err := proc.Environ(st.PID)
		if err != nil {
			continue
		}
		var owner, key string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, ledger.EnvOwner+"="); ok {
				owner = v
			} else if v, ok := strings.CutPrefix(kv, ledger.EnvSpawn+"="); ok {
				key = v
			}
		}
		r := keys[key]
		if owner != o.self.String() || r == nil {
			continue
		}
		o.adoptEscapee(r, st)
		known[st.PGID] = true
	}
}

// adoptEscapee registers the process group of the escapee st under r.
func (o *Owner) adoptEscapee(r *reg, st proc.Stat) {
	leader := proc.Identity{PID: st.PGID}
	if id, err := proc.Read(st.PGID); err == nil {
		leader = id // the group's leader is alive: check it before each signal
	}
	e := &reg{id: fmt.Sprintf("%se%d", r.id, st.PGID), key: r.key,
		g: Group{Unit: r.g.Unit, PGID: st.PGID, Leader: leader}}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.regs[r.id] != r || o.safeLocked(e.g) != nil {
		return
	}
	// Kept under its spawn whatever the supervisor says: Stop and a clean
	// Close stop it with the spawn. What the supervisor does not take (the
	// line cannot be carried, it refuses, it cannot start) is reported,
	// never dropped silently: such a group would not die with a crash.
	r.esc = append(r.esc, e)
	o.escPids[st.PID] = true
	what := fmt.Sprintf("%s: escapee %d (group %d)", r.g.Unit, st.PID, st.PGID)
	l, err := o.lineLocked(e)
	if err == nil && o.pipe == nil {
		err = o.startLocked() // replays e with the rest
		l = nil
	}
	if err != nil {
		o.warn(fmt.Sprintf("%s is not registered with the supervisor: %v", what, err))
		return
	}
	o.opts.Logf("supervisor: %s left its process group; registering it", what)
	if l != nil {
		o.pipe.Send([][]byte{l}, func(_ int, err error) {
			if err != nil && !errors.As(err, new(*lostError)) {
				o.warn(fmt.Sprintf("%s is not registered with the supervisor: %v", what, err))
			}
		})
	}
}
