package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
	"github.com/spf13/cobra"
)

// whoOptions are the argument of who, and where it prints.
type whoOptions struct {
	clientOptions
	pid string // the PID argument, as given
}

// newWhoCmd answers, offline, "who started this process?" from the spawn
// ledger of --state; runWho does the work.
func newWhoCmd(g *globals) *cobra.Command {
	opts := &whoOptions{clientOptions: clientOptions{g: g}}
	return opts.command(&cobra.Command{
		Use:   "who PID",
		Short: "Say which unit and owner started a process (from the ledger, offline)",
		Long: `Say which unit and which owner (alive or dead) started a process, from the
spawn ledger of the state directory; no daemon is needed.

PID may be a group's leader, a member of a recorded process group, or a
process in a recorded cgroup. Identities are checked: a recycled pid or
group id is never taken for the recorded one. For a process hermes did not
start, who says so and shows its parent, group, session, command line and
whether it carries hermes's environment tags (a spawn whose ledger entry
was lost).`,
		Args: cobra.ExactArgs(1),
	}, func(ctx context.Context, args []string) error {
		opts.pid = args[0]
		return runWho(ctx, opts)
	})
}

// runWho prints who started the process opts.pid. Exit status: 0 with an
// answer (started by hermes or not), exitcode.Usage for a pid that is not
// one, exitcode.Failure when the pid does not exist or the ledger cannot
// be read.
func runWho(ctx context.Context, opts *whoOptions) error {
	pid, err := strconv.Atoi(opts.pid)
	if err != nil || pid <= 0 {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("who: %q is not a pid; pass a positive process id", opts.pid)}
	}
	opts.g.daemonPaths(ctx) // the ledger of the running hermesd, if any
	r, err := who(ctx, opts.g.State, pid)
	if err != nil {
		return &exitError{code: exitcode.Failure, err: err}
	}
	r.keptFor(ctx, opts.g)
	return show(opts.streams, r, func(w io.Writer, r *whoReport) { r.write(w, time.Now()); r.writeKept(w) })
}

// Match kinds: how a process belongs to a ledger entry.
const (
	matchLeader = "leader" // the group's recorded leader, same start time
	matchCgroup = "cgroup" // in the recorded cgroup (or below it)
	matchPGID   = "pgid"   // a member of the recorded process group
)

// whoReport is who's answer; its JSON form is the -o json output.
type whoReport struct {
	PID         int               `json:"pid"`
	Found       bool              `json:"found"` // a ledger entry claims the process
	Ledger      string            `json:"ledger"`
	Match       string            `json:"match,omitempty"` // leader | cgroup | pgid
	Entry       *ledger.Entry     `json:"entry,omitempty"`
	LeaderAlive bool              `json:"leader_alive"`
	OwnerAlive  bool              `json:"owner_alive"`
	Process     whoProcess        `json:"process"`
	Tags        map[string]string `json:"tags,omitempty"` // hermes environment tags of the process
	TagsError   string            `json:"tags_error,omitempty"`
	// Kept is the group hermesd keeps for a control owner that holds the
	// process (who_kept.go); absent when none, or without hermesd.
	Kept *control.OwnedGroup `json:"kept,omitempty"`
}

type whoProcess struct {
	PPID      int      `json:"ppid"`
	PGID      int      `json:"pgid"`
	SID       int      `json:"session"`
	Comm      string   `json:"comm"`
	Cmdline   []string `json:"cmdline"`
	StartTime uint64   `json:"start_time"`
	Zombie    bool     `json:"zombie,omitempty"`
	Cgroup    string   `json:"cgroup,omitempty"` // cgroup v2 path, as in /proc/PID/cgroup
}

// who reads the process and the ledger of state, and finds the entry
// that claims pid. A state directory that does not exist has no entries
// (and is not created).
func who(ctx context.Context, state string, pid int) (*whoReport, error) {
	st, err := proc.ReadStat(pid)
	if errors.Is(err, proc.ErrGone) {
		return nil, fmt.Errorf("who: pid %d: no such process", pid)
	}
	if err != nil {
		return nil, fmt.Errorf("who: pid %d: %w", pid, err)
	}
	r := &whoReport{PID: pid, Ledger: filepath.Join(state, ledger.FileName), Process: whoProcess{
		PPID: st.PPID, PGID: st.PGID, SID: st.SID, Comm: st.Comm, StartTime: st.StartTime, Zombie: st.Zombie(),
	}}
	r.Process.Cmdline, _ = proc.Cmdline(pid) // a zombie or kernel thread has none
	r.Process.Cgroup = proc.Cgroup(pid)
	r.readTags(pid)

	var entries []ledger.Entry
	if _, err := os.Stat(state); err == nil {
		l, err := ledger.Open(state)
		if err != nil {
			return nil, fmt.Errorf("who: %w", err)
		}
		if entries, err = l.Entries(ctx); err != nil {
			return nil, fmt.Errorf("who: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("who: state directory: %w", err)
	}
	boot, _ := proc.BootID()
	mount := proc.CgroupMount()
	best := -1
	for i := range entries {
		m := matchEntry(entries[i], st, r.Process.Cgroup, mount, boot)
		if m == "" {
			continue
		}
		if best < 0 || rank(m) < rank(r.Match) {
			best, r.Match = i, m
		}
	}
	if best >= 0 {
		e := entries[best]
		r.Found, r.Entry = true, &e
		r.LeaderAlive, r.OwnerAlive = e.Leader.Alive(), e.Owner.Alive()
	}
	return r, nil
}

func rank(match string) int {
	return slices.Index([]string{matchLeader, matchCgroup, matchPGID}, match)
}

// matchEntry says how the process st (in cgroup path cg) belongs to e, or
// "" when it does not. An entry of another boot never matches. A leader
// matches only with its recorded start time. A group member matches only
// when the group id was not recycled: the process holding the leader's pid
// (if any) must still have the recorded start time, and the member cannot
// have started before the leader.
func matchEntry(e ledger.Entry, st proc.Stat, cg, mount, boot string) string {
	if e.Leader.BootID != "" && boot != "" && e.Leader.BootID != boot {
		return ""
	}
	if e.Leader.PID == st.PID {
		if e.Leader.StartTime == st.StartTime {
			return matchLeader
		}
		return "" // the leader's pid was recycled
	}
	if e.Cgroup != "" && cg != "" && mount != "" {
		full := filepath.Join(mount, cg)
		if full == e.Cgroup || strings.HasPrefix(full, e.Cgroup+"/") {
			return matchCgroup
		}
	}
	if e.PGID > 1 && st.PGID == e.PGID && st.StartTime >= e.Leader.StartTime {
		if ls, err := proc.ReadStat(e.Leader.PID); err == nil && ls.StartTime != e.Leader.StartTime {
			return "" // a stranger holds the leader's pid: the group id may be recycled
		}
		return matchPGID
	}
	return ""
}

// readTags reads hermes's environment tags from /proc/PID/environ.
func (r *whoReport) readTags(pid int) {
	env, err := proc.Environ(pid)
	if err != nil {
		r.TagsError = err.Error()
		if errors.Is(err, fs.ErrPermission) {
			r.TagsError = "environment not readable (permission denied; another user's process)"
		}
		return
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch k {
		case ledger.EnvUnit, ledger.EnvOwner, ledger.EnvSpawn, ledger.EnvOwnership:
			if r.Tags == nil {
				r.Tags = map[string]string{}
			}
			r.Tags[k] = v
		}
	}
}

// write prints the report for humans.
func (r *whoReport) write(w io.Writer, now time.Time) {
	row := func(k, v string) { fmt.Fprintf(w, "%-11s %s\n", k+":", v) }
	p := r.Process
	if !r.Found {
		fmt.Fprintf(w, "pid %d was not started by hermes units (no ledger entry in %s)\n", r.PID, filepath.Dir(r.Ledger))
		row("ppid", strconv.Itoa(p.PPID))
		row("pgid", strconv.Itoa(p.PGID))
		row("session", strconv.Itoa(p.SID))
		row("command", commandLine(p))
		switch {
		case len(r.Tags) > 0:
			row("tags", formatTags(r.Tags)+"; hermes spawned it, but its ledger entry is lost (another --state, or a rebuilt ledger)")
		case r.TagsError != "":
			row("tags", r.TagsError)
		default:
			row("tags", "none (no hermes environment tags)")
		}
		return
	}
	e := r.Entry
	how := map[string]string{
		matchLeader: "the leader of its group",
		matchCgroup: "in its cgroup",
		matchPGID:   fmt.Sprintf("a member of its process group %d", e.PGID),
	}[r.Match]
	fmt.Fprintf(w, "pid %d was started by hermes units: unit %s (%s)\n", r.PID, e.Unit, how)
	row("unit", e.Unit)
	role := string(e.Role)
	if role == "" {
		role = "owner"
	}
	row("owner", fmt.Sprintf("pid %d (%s), %s", e.Owner.PID, role, aliveWord(r.OwnerAlive)))
	own := string(e.Ownership)
	if e.Reason != "" {
		own += " (reason: " + e.Reason + ")"
	}
	row("ownership", own)
	if e.State != ledger.Live {
		row("state", string(e.State))
	}
	row("leader", fmt.Sprintf("pid %d, %s", e.Leader.PID, aliveWord(r.LeaderAlive)))
	row("command", strings.Join(e.Argv, " "))
	if !e.Spawned.IsZero() {
		row("spawned", fmt.Sprintf("%s (%s ago)", e.Spawned.Local().Format(time.DateTime), now.Sub(e.Spawned).Round(time.Second)))
	}
	row("log", cmp.Or(e.Log, "-"))
	row("pgid", strconv.Itoa(e.PGID))
	row("cgroup", cmp.Or(e.Cgroup, "-"))
	if r.Match != matchLeader {
		row("process", commandLine(p))
	}
}

func commandLine(p whoProcess) string {
	s := strings.Join(p.Cmdline, " ")
	if s == "" {
		s = "[" + p.Comm + "]"
	}
	if p.Zombie {
		s += " (zombie)"
	}
	return s
}

func formatTags(t map[string]string) string {
	var parts []string
	for _, k := range []string{ledger.EnvUnit, ledger.EnvOwner, ledger.EnvSpawn, ledger.EnvOwnership} {
		if v, ok := t[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func aliveWord(alive bool) string {
	if alive {
		return "alive"
	}
	return "dead"
}
