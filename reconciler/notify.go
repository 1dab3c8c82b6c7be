package reconciler

import (
	"fmt"
	"strings"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// NotifySockets gives unit runs a NOTIFY_SOCKET each (a *notify.Sockets,
// the per-unit mode): Open before a spawn, Remove once the run has ended.
// Both are called on Run's goroutine and must not block for long.
type NotifySockets interface {
	Open() (path string, err error)
	Remove(path string)
}

// listensForNotify reports whether hermesd acts on s's sd_notify messages
// (READY=1 for ready.notify, WATCHDOG=1 for a watchdog), which is when a
// run of s gets a socket of its own: a socket for every unit would cost a
// descriptor and a file per unit for messages nobody reads, and a program
// that finds no NOTIFY_SOCKET takes sd_notify for a no-op, as outside
// systemd.
func listensForNotify(s units.Spec) bool {
	return s.Ready.Notify || s.Timeouts.Watchdog > 0
}

// openNotify is the NOTIFY_SOCKET of the next run of a unit of spec s:
// with NotifySockets, a socket of the run's own when s listens for
// sd_notify ("" when not), which the caller spawns the run with and
// closeNotify removes once the run has ended or failed to begin; else the
// shared one.
func (r *Reconciler) openNotify(s units.Spec) (string, error) {
	if r.opt.NotifySockets == nil {
		return r.opt.NotifySocket, nil
	}
	if !listensForNotify(s) {
		return "", nil
	}
	path, err := r.opt.NotifySockets.Open()
	if err != nil {
		return "", fmt.Errorf("unit %s: notify socket: %w", s.Name, err)
	}
	return path, nil
}

// closeNotify removes a run's socket (openNotify), when it has its own.
func (r *Reconciler) closeNotify(path string) {
	if path != "" && r.opt.NotifySockets != nil {
		r.opt.NotifySockets.Remove(path)
	}
}

// NotifyOn hands Run an sd_notify message received on a unit's own socket
// (NotifySockets): the message is that run's, whoever sent it. pid is the
// sender's from SCM_CREDENTIALS (Linux), or 0 where there are none; when it
// is a live process of no group of the unit, the message is ignored (a
// sender that has already exited cannot be checked and is believed: only
// hermesd's user can reach the socket). It is called from the notify
// server's goroutine; socket "" is the shared one (Notify).
func (r *Reconciler) NotifyOn(socket string, pid int, fields map[string]string) {
	ev := notifyEvent{socket: socket, pid: pid, fields: fields}
	if pid > 0 {
		if st, err := proc.ReadStat(pid); err == nil {
			ev.pgid, ev.sid, ev.seen = st.PGID, st.SID, true
		}
		ev.cgroup = cgroupOf(pid)
	}
	r.post(ev)
}

// notifySender is the unit an sd_notify message is of: the one whose
// socket it came on, or on the shared socket the one whose group holds the
// sender; nil when none is active.
func (r *Reconciler) notifySender(ev notifyEvent) *unit {
	for _, c := range r.units {
		if !c.state.active() || c.state == Stopping {
			continue
		}
		if ev.socket == "" {
			if sentBy(c, ev) {
				return c
			}
			continue
		}
		if c.run.notifySock != ev.socket {
			continue
		}
		// A sender that has exited already cannot be placed: its message
		// counts (systemd-notify exits as soon as it has sent). One seen
		// is checked, whatever its group reads as (0 for a group made
		// outside hermesd's PID namespace, which is no unit's).
		if ev.seen && !sentBy(c, ev) {
			r.log.Debug("notify message on a unit's socket from a process outside it; ignored", "unit", c.spec.Name, "pid", ev.pid, "pgid", ev.pgid)
			return nil
		}
		return c
	}
	return nil
}

// sentBy reports whether the sender of ev is a process of u's run, on
// evidence the sender cannot forge by joining another unit's process
// group (setpgid):
//   - its leader or its main process (a forking unit's daemon);
//   - cgroup mode: a process in u's cgroup (or below it); the process
//     group does not count there;
//   - pgroup mode: a process in the session u's leader leads (each unit
//     runs in a session of its own, which no process can join), or in the
//     one its main process leads (a daemon's setsid). A unit whose leader
//     leads no session (one started in hermesd's) has only its process
//     group to go by, as before units had sessions of their own.
//
// It reads the leader's stat when the process group is all that matches
// (Run's goroutine; one unit per message).
func sentBy(u *unit, ev notifyEvent) bool {
	g, main := u.run.group, u.run.main
	hasMain := !main.IsZero()
	switch {
	case ev.pid == g.Leader.PID, hasMain && ev.pid == main.PID:
		return true
	case g.Cgroup != "":
		return ev.cgroup != "" && inCgroup(g.Cgroup, ev.cgroup)
	case ev.sid > 0 && (ev.sid == g.Leader.PID || hasMain && ev.sid == main.PID):
		return true
	case ev.pgid > 0 && ev.pgid == g.PGID:
		st, err := proc.ReadStat(g.Leader.PID)
		return err == nil && st.SID != g.Leader.PID
	}
	return false
}

// inCgroup reports whether rel, a process's cgroup as /proc/PID/cgroup
// names it (relative to the cgroup v2 mount), is dir, an absolute cgroup
// directory, or one below it.
func inCgroup(dir, rel string) bool {
	m := proc.CgroupMount()
	if m == "" {
		return strings.HasSuffix(dir, rel)
	}
	full := m + rel
	return full == dir || strings.HasPrefix(full, dir+"/")
}
