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

// openNotify gives u's next run its own socket, when NotifySockets is set
// and u listens for sd_notify; the caller spawns u next, and closeNotify
// removes the socket once the run has ended.
func (r *Reconciler) openNotify(u *unit) error {
	if r.opt.NotifySockets == nil || !listensForNotify(u.spec) {
		return nil
	}
	path, err := r.opt.NotifySockets.Open()
	if err != nil {
		return fmt.Errorf("unit %s: notify socket: %w", u.spec.Name, err)
	}
	u.notifySock = path
	return nil
}

// closeNotify removes the socket of u's run, when it has one: the run has
// ended (its group is empty) or never began.
func (r *Reconciler) closeNotify(u *unit) {
	if u.notifySock != "" {
		r.opt.NotifySockets.Remove(u.notifySock)
		u.notifySock = ""
	}
}

// notifySocket is the NOTIFY_SOCKET of u's run: its own socket with
// NotifySockets (none when u does not listen), else the shared one.
func (r *Reconciler) notifySocket(u *unit) string {
	if r.opt.NotifySockets != nil {
		return u.notifySock
	}
	return r.opt.NotifySocket
}

// NotifyOn hands Run an sd_notify message received on a unit's own socket
// (NotifySockets): the message is that run's, whoever sent it. pid is the
// sender's from SCM_CREDENTIALS (Linux), or 0 where there are none; when it
// is a live process of no group of the unit, the message is ignored (a
// sender that has already exited cannot be checked and is believed: only
// hermesd's user can reach the socket). It is called from the notify
// server's goroutine.
func (r *Reconciler) NotifyOn(socket string, pid int, fields map[string]string) {
	ev := notifyEvent{socket: socket, pid: pid, fields: fields}
	if pid > 0 {
		if st, err := proc.ReadStat(pid); err == nil {
			ev.pgid = st.PGID
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
		if c.notifySock != ev.socket {
			continue
		}
		if ev.pgid > 0 && !sentBy(c, ev) {
			r.log.Debug("notify message on a unit's socket from a process outside it; ignored", "unit", c.spec.Name, "pid", ev.pid, "pgid", ev.pgid)
			return nil
		}
		return c
	}
	return nil
}

// sentBy reports whether the sender of ev is a process of u's run: its
// leader, its main process, or in its process group or cgroup.
func sentBy(u *unit, ev notifyEvent) bool {
	g := u.group
	return ev.pid == g.Leader.PID || (!u.main.IsZero() && ev.pid == u.main.PID) ||
		(ev.pgid > 0 && ev.pgid == g.PGID) || (ev.cgroup != "" && g.Cgroup != "" && strings.HasSuffix(g.Cgroup, ev.cgroup))
}
