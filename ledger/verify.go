package ledger

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hermes-units/hermes/proc"
	"golang.org/x/sys/unix"
)

// ErrUntrusted reports a ledger entry that the kernel contradicts: acting
// on it (re-adopting it, signalling its group or cgroup) could hit a
// process hermes never started.
var ErrUntrusted = errors.New("ledger entry not trusted")

// keptDir is the directory, below an owner subtree's parent, of the
// cgroups of survivors (supervisor's hermes-kept).
const keptDir = "hermes-kept"

// Check holds e against the kernel before anyone acts on it: the ledger is
// evidence, not authority (any process of the user can write the file). e
// is trusted only when its leader is alive with the recorded identity
// (else the error wraps proc.ErrGone) and leads the recorded process
// group, and the kernel ties that leader to the very spawn recorded:
//   - where the entry names a cgroup: that cgroup is a hermes one, named
//     for that spawn (<base>/hermes-<owner>/<unit>.<key> or
//     <base>/hermes-kept/<unit>.<key>, inside the cgroup v2 mount), and the
//     leader is in it. Only hermes's user moves processes into it;
//   - else, by the leader's environment: the spawn key (EnvSpawn) and this
//     ledger's state directory (EnvState) SpawnOwned gave it, which a
//     stranger does not have; or, when it carries no tags at all (a
//     program that writes its process title over its environment: nginx,
//     redis-server), by the spawn's log (e.Log, a regular file) held open
//     as its stdout or stderr, the descriptor SpawnOwned gave it.
//
// Tags that name another spawn or state directory contradict the entry
// whatever else matches. Any failure wraps ErrUntrusted and says what did
// not match. Check reads /proc and takes no lock.
func (l *Ledger) Check(e Entry) error {
	untrusted := func(format string, args ...any) error {
		return fmt.Errorf("ledger entry of %s (leader %s): %s: %w", e.Unit, e.Leader, fmt.Sprintf(format, args...), ErrUntrusted)
	}
	if !e.Leader.Alive() {
		if now, ok := l.sameSpawn(e); ok {
			// Not a recycled pid: a recycled one would not carry this
			// spawn's key. The process is the spawn's, the entry's
			// identity of it is wrong (edited or crafted): the entry is
			// not trusted, and nothing is done to the process.
			return untrusted("pid %d carries this spawn's key but its identity is %s, not the recorded one (the entry was edited?)", e.Leader.PID, now)
		}
		return fmt.Errorf("ledger entry of %s: leader %s: %w", e.Unit, e.Leader, proc.ErrGone)
	}
	st, err := proc.ReadStat(e.Leader.PID)
	if err != nil {
		return fmt.Errorf("ledger entry of %s: leader %s: %w", e.Unit, e.Leader, proc.ErrGone)
	}
	if st.PGID != e.PGID || e.PGID <= 1 {
		return untrusted("the leader is in process group %d, not the recorded %d", st.PGID, e.PGID)
	}
	if e.Spawn == "" {
		return untrusted("no spawn key recorded")
	}
	env, err := proc.Environ(e.Leader.PID)
	if err != nil {
		return untrusted("its environment cannot be read: %v", err)
	}
	t, _ := tags(env)
	tagged := t[EnvSpawn] != "" || t[EnvState] != ""
	if tagged && t[EnvSpawn] != e.Spawn {
		return untrusted("the leader does not carry the spawn key %s (%s=%q)", e.Spawn, EnvSpawn, t[EnvSpawn])
	}
	if tagged && t[EnvState] != l.Dir() {
		return untrusted("the leader was spawned for state directory %q, not %s", t[EnvState], l.Dir())
	}
	if e.Cgroup != "" {
		return l.checkCgroup(e, untrusted)
	}
	if tagged || holdsLog(e) {
		return nil
	}
	if e.Log == "" {
		return untrusted("the leader does not carry the spawn key %s (%s unset: its environment was erased or overwritten), and no log is recorded to vouch for it", e.Spawn, EnvSpawn)
	}
	return untrusted("the leader does not carry the spawn key %s (%s unset: its environment was erased or overwritten), nor holds the spawn's log %s as its stdout or stderr", e.Spawn, EnvSpawn, e.Log)
}

// sameSpawn reports whether the live process at e's leader pid, whose
// identity is not the recorded one, carries e's spawn key and this
// ledger's state directory, and returns its identity.
func (l *Ledger) sameSpawn(e Entry) (proc.Identity, bool) {
	now, err := proc.Read(e.Leader.PID)
	if err != nil || e.Spawn == "" {
		return proc.Identity{}, false
	}
	env, err := proc.Environ(e.Leader.PID)
	if err != nil {
		return proc.Identity{}, false
	}
	t, _ := tags(env)
	return now, t[EnvSpawn] == e.Spawn && t[EnvState] == l.Dir()
}

// checkCgroup holds e's cgroup against the kernel (see Check).
func (l *Ledger) checkCgroup(e Entry, untrusted func(format string, args ...any) error) error {
	mount := proc.CgroupMount()
	cg := filepath.Clean(e.Cgroup)
	rel, ok := strings.CutPrefix(cg, mount+"/")
	if mount == "" || !ok || cg != e.Cgroup || strings.Contains(e.Cgroup, "..") {
		return untrusted("cgroup %q is not inside the cgroup v2 hierarchy %q", e.Cgroup, mount)
	}
	parent := filepath.Base(filepath.Dir(cg))
	if !strings.HasSuffix(filepath.Base(cg), "."+e.Spawn) || parent != keptDir && !ownerDir(parent) {
		return untrusted("cgroup %s is not a hermes cgroup of this spawn (want <owner subtree or %s>/<unit>.%s)", e.Cgroup, keptDir, e.Spawn)
	}
	if got := proc.Cgroup(e.Leader.PID); got != "/"+rel {
		return untrusted("the leader is in cgroup %q, not in %s", got, e.Cgroup)
	}
	return nil
}

// holdsLog reports whether e's leader has e's log, a regular file, open
// as its stdout or stderr (the same file, not the same name).
func holdsLog(e Entry) bool {
	var st unix.Stat_t
	if e.Log == "" || unix.Stat(e.Log, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	for fd := 1; fd <= 2; fd++ {
		if dev, ino, err := proc.DescriptorFile(e.Leader.PID, fd); err == nil && dev == uint64(st.Dev) && ino == uint64(st.Ino) {
			return true
		}
	}
	return false
}

// ownerDir reports whether name is an owner's cgroup subtree:
// hermes-PID_STARTTIME.
func ownerDir(name string) bool {
	s, ok := strings.CutPrefix(name, "hermes-")
	if !ok {
		return false
	}
	p, st, ok := strings.Cut(s, "_")
	return ok && digits(p) && digits(st)
}

func digits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// Strays lists the live processes, outside e's own process group, that
// carry e's spawn key and this ledger's state directory in their
// environment: the escapees of that spawn (a daemon's setsid), which a
// stop of e's group alone would miss where no cgroup holds them. It
// returns one process per group, in pid order. Escapees that erased their
// environment cannot be told apart here.
func (l *Ledger) Strays(e Entry) []proc.Identity { return l.tagged(e, true) }

// Remains lists, one per process group and in pid order, the live
// processes that carry e's spawn key and this ledger's state directory in
// their environment, e's own group included: what is left of the spawn
// once its leader is gone (a child that outlived it), which no leader
// identity can vouch for, only the spawn's own tags.
func (l *Ledger) Remains(e Entry) []proc.Identity { return l.tagged(e, false) }

// tagged lists the processes of Strays (strays) or Remains.
func (l *Ledger) tagged(e Entry, strays bool) []proc.Identity {
	if e.Spawn == "" {
		return nil
	}
	pids, err := proc.Pids()
	if err != nil {
		return nil
	}
	dir := l.Dir()
	seen := map[int]bool{}
	if strays {
		seen[e.PGID] = true
	}
	var out []proc.Identity
	for _, pid := range pids {
		st, err := proc.ReadStat(pid)
		if err != nil || st.Zombie() || seen[st.PGID] || st.PGID <= 1 {
			continue
		}
		env, err := proc.Environ(pid)
		if err != nil {
			continue
		}
		if t, _ := tags(env); t[EnvSpawn] != e.Spawn || t[EnvState] != dir {
			continue
		}
		if id, err := proc.Read(pid); err == nil {
			seen[st.PGID] = true
			out = append(out, id)
		}
	}
	return out
}
