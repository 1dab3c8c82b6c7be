package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// activity is a unit's state in systemctl's words: what is-active and
// is-failed print, and what status's exit code is decided on.
type activity int

const (
	actUnknown      activity = iota // a unit hermesd does not know, or a state this hermesctl does not (a newer hermesd)
	actActive                       // running, adopted
	actInactive                     // stopped, disabled, inactive, exited, done, released
	actFailed                       // failed, including backing off before a restart; a unit file that did not load (error)
	actActivating                   // starting, including waiting for what it is after or requires
	actDeactivating                 // stopping
)

func (a activity) String() string {
	switch a {
	case actActive:
		return "active"
	case actInactive:
		return "inactive"
	case actFailed:
		return "failed"
	case actActivating:
		return "activating"
	case actDeactivating:
		return "deactivating"
	}
	return "unknown"
}

// activityOf maps the state of u onto systemctl's words. A done oneshot
// is active with remain_after_exit, inactive without, as systemd's oneshot
// with and without RemainAfterExit.
func activityOf(u control.Unit) activity {
	if u.State == control.StateDone && u.RemainAfterExit {
		return actActive
	}
	switch u.State {
	case control.StateRunning, control.StateAdopted:
		return actActive
	case control.StateStopped, control.StateDisabled, control.StateInactive, control.StateExited, control.StateDone, control.StateReleased:
		return actInactive
	case control.StateFailed, control.StateError:
		return actFailed
	case control.StateStarting:
		return actActivating
	case control.StateStopping:
		return actDeactivating
	}
	return actUnknown
}

// activityMap is the mapping as the help of is-active and is-failed shows it.
const activityMap = `hermes's states in systemctl's words:

  running, adopted, done with         active
  remain_after_exit
  starting (or waiting to start)     activating
  stopping                           deactivating
  failed (or backing off), error     failed
  (its unit file did not load)
  stopped, disabled, inactive,       inactive
  exited, done, released

A unit hermesd does not know is "unknown".`

// settled returns whether a unit of st is as hermesd means it to be, for
// status with no unit named: active, or at rest on purpose. At rest are a
// unit stopped by command (stopped) or disabled (disabled); one not wanted
// running for another reason (inactive: a job waiting for its schedule,
// the unit whose group was released); a released group; a oneshot that
// finished (done); a unit whose program exited 0 and whose restart policy
// ends it there (exited, as a job after a run that succeeded: systemd's
// is-system-running counts such a unit healthy too); and a unit waiting,
// not yet spawned, for a unit it requires that is held so (stop db, and
// the units that require db wait for it, as the stop said). Any other
// unit starting, stopping or failed (a job whose last run failed
// included) is not settled.
func settled(st control.Status) func(*control.Unit) bool {
	// byName indexes the rows by name, built when a unit waits for those
	// it requires: a status of thousands of units seldom has one, and the
	// index cost a twentieth of status's CPU.
	var byName map[string]int
	row := func(name string) (*control.Unit, bool) {
		if byName == nil {
			byName = make(map[string]int, len(st.Units))
			for i, u := range st.Units {
				if _, ok := byName[u.Name]; !ok { // a unit comes before the group it released
					byName[u.Name] = i
				}
			}
		}
		i, ok := byName[name]
		if !ok {
			return nil, false
		}
		return &st.Units[i], true
	}
	// held reports a unit kept from running on purpose: stopped,
	// disabled, not wanted (inactive, released), or waiting for a unit
	// it requires that is held. seen guards against a cycle (refused at
	// load, but the wire does not promise it).
	var held func(u *control.Unit, seen map[string]bool) bool
	held = func(u *control.Unit, seen map[string]bool) bool {
		switch u.State {
		case control.StateStopped, control.StateDisabled, control.StateInactive, control.StateReleased:
			return true
		case control.StateStarting:
			if u.PID != 0 || seen[u.Name] { // spawned: it starts, it does not wait
				return false
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[u.Name] = true
			for _, r := range u.Requires {
				if dep, ok := row(r); ok && held(dep, seen) {
					return true
				}
			}
		}
		return false
	}
	return func(u *control.Unit) bool {
		switch u.State {
		case control.StateExited, control.StateDone:
			return true
		}
		return activityOf(*u) == actActive || held(u, nil)
	}
}

// statusExit is status's verdict on st, as an exit code (0 when all is
// well): with units named, each must be active; with none, each must be
// settled and every unit file must have loaded (the row of a unit whose
// file did not load, state error, counts as the config error it is).
func statusExit(st control.Status, named bool) int {
	rest := settled(st)
	for i := range st.Units {
		u := &st.Units[i]
		if !named && u.State == control.StateError {
			continue
		}
		if named && activityOf(*u) != actActive || !named && !rest(u) {
			return exitcode.HermesctlNotRunning
		}
	}
	if !named && len(st.ConfigErrors) > 0 {
		return exitcode.Failure
	}
	return exitcode.Success
}

func newIsActiveCmd(g *globals) *cobra.Command {
	return newIsCmd(g, "is-active", "Say whether units are active; exit 0 when every one is",
		"Print each unit's state in systemctl's words, one line per unit in the\n"+
			"order given, and exit 0 when every unit is active, 1 otherwise (as\n"+
			"`hermesctl status UNIT...` exits 0 or 3; systemctl is-active exits 0 when\n"+
			"any one is).",
		func(as []activity) bool {
			return !slices.ContainsFunc(as, func(a activity) bool { return a != actActive })
		})
}

func newIsFailedCmd(g *globals) *cobra.Command {
	return newIsCmd(g, "is-failed", "Say whether units are failed; exit 0 when any one is",
		"Print each unit's state in systemctl's words, one line per unit in the\n"+
			"order given, and exit 0 when any unit is failed, 1 otherwise (as\n"+
			"systemctl is-failed).",
		func(as []activity) bool { return slices.Contains(as, actFailed) })
}

// isOptions are the flags and arguments of is-active, is-failed and
// is-enabled, and where they print.
type isOptions struct {
	clientOptions
	name  string // the command: "is-active"
	units []string
	quiet bool // --quiet
}

// newIsCmd is is-active or is-failed: the states of the units named, and
// yes (exit 0) or no (exit 1) from answer. An error (no hermesd, say) also
// exits 1, with its one line on stderr.
func newIsCmd(g *globals, name, short, long string, answer func([]activity) bool) *cobra.Command {
	return newIsCmdOf(g, name, short, long+"\n\n"+activityMap, func(ctx context.Context, opts *isOptions) error {
		return runIsActivity(ctx, opts, answer)
	})
}

// newIsCmdOf is the command of an is-* question, whose run is run.
func newIsCmdOf(g *globals, name, short, long string, run func(context.Context, *isOptions) error) *cobra.Command {
	opts := &isOptions{clientOptions: clientOptions{g: g}, name: name}
	c := opts.unitsCommand(&cobra.Command{
		Use:   name + " UNIT...",
		Short: short,
		Long:  long + "\n\n" + isHelp,
		Args:  cobra.MinimumNArgs(1),
	}, &opts.units, func(ctx context.Context) error { return run(ctx, opts) })
	c.Flags().BoolVarP(&opts.quiet, "quiet", "q", false, "print nothing; answer with the exit status only")
	return c
}

// runIsActivity prints the activity of each unit named and answers with
// answer's verdict on them.
func runIsActivity(ctx context.Context, opts *isOptions, answer func([]activity) bool) error {
	as, err := activities(ctx, opts.g, opts.units)
	if err != nil {
		return fmt.Errorf("%s: %w", opts.name, err)
	}
	words := make([]string, len(as))
	for i, a := range as {
		words[i] = a.String()
	}
	return opts.print(answer(as), words)
}

// isHelp ends the help of is-active, is-failed and is-enabled.
const isHelp = `--quiet prints nothing: the exit status alone answers. -o json prints the
answer and each unit's word, in the order given:
{"answer": false, "units": [{"unit": "web", "is": "..."}, ...]}.`

// isReport is the -o json form of is-active, is-failed and is-enabled.
type isReport struct {
	Answer bool     `json:"answer"` // what the exit status says: true for 0
	Units  []isUnit `json:"units"`
}

type isUnit struct {
	Unit string `json:"unit"`
	Is   string `json:"is"` // the word the text form prints
}

// print prints the words of the units named (in order, one a line) or
// their isReport, nothing when quiet, and returns the exit status of
// answer: nil for yes, an exitError of exitcode.Failure for no.
func (o *isOptions) print(answer bool, words []string) error {
	switch {
	case o.quiet:
	case o.json:
		r := isReport{Answer: answer, Units: make([]isUnit, len(o.units))}
		for i, n := range o.units {
			r.Units[i] = isUnit{Unit: n, Is: words[i]}
		}
		if err := writeJSON(o.out, r); err != nil {
			return err
		}
	default:
		for _, w := range words {
			fmt.Fprintln(o.out, w)
		}
	}
	if !answer {
		return &exitError{code: exitcode.Failure}
	}
	return nil
}

// activities asks hermesd for the units named and returns their states in
// that order; a name hermesd does not know is actUnknown. Of a name with
// two rows (a unit and the group it released), the unit's, which comes
// first, counts.
func activities(ctx context.Context, g *globals, names []string) ([]activity, error) {
	st, err := statusOf(ctx, g, names)
	if err != nil {
		return nil, err
	}
	of := map[string]activity{}
	for _, u := range st.Units {
		if _, ok := of[u.Name]; !ok {
			of[u.Name] = activityOf(u)
		}
	}
	as := make([]activity, len(names))
	for i, n := range names {
		as[i] = of[n] // actUnknown when absent
	}
	return as, nil
}

// statusOf is hermesd's status of the units named, for a question about
// each that answers for a unit it does not know too: when one name is
// unknown, hermesd refuses the call as a whole, and statusOf asks for
// every unit instead, so that the caller tells which.
func statusOf(ctx context.Context, g *globals, names []string) (control.Status, error) {
	st, err := askStatus(ctx, g, names...)
	if errors.Is(err, control.ErrUnknownUnit) {
		st, err = askStatus(ctx, g)
	}
	return st, err
}
