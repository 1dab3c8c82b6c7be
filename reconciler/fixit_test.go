package reconciler

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/units"
)

// noKeeper is a Spawner that keeps no daemons (pgroup mode).
type noKeeper struct{ Spawner }

func (noKeeper) KeepsDaemons() bool { return false }

// TestFixItParts: the reconciler's errors that say what to do keep their
// text, and say the fix apart (diag.Split), so that the control API
// carries it as the detail of its answer.
func TestFixItParts(t *testing.T) {
	r := &Reconciler{}
	r.opt.Spawner = noKeeper{}
	forking := r.forkingSurvivorRefused(&unit{spec: &units.Spec{Name: "d", Type: units.Forking, Ownership: units.Adoptable}})
	for _, tc := range []struct {
		name                  string
		err                   error
		text, summary, detail string
	}{
		{"forking survivor", forking,
			"unit d: type: forking with ownership: adoptable needs cgroup mode: in pgroup mode its daemon leaves the process group, and once hermesd is gone nothing tells it apart from a stranger (its process title may overwrite its environment); run it in the foreground as type: simple (nginx: -g 'daemon off;', redis: --daemonize no), make it owned, or run hermesd with --supervisor-mode cgroup",
			"unit d: type: forking with ownership: adoptable needs cgroup mode: in pgroup mode its daemon leaves the process group, and once hermesd is gone nothing tells it apart from a stranger (its process title may overwrite its environment)",
			"run it in the foreground as type: simple (nginx: -g 'daemon off;', redis: --daemonize no), make it owned, or run hermesd with --supervisor-mode cgroup"},
		{"start limit", &StartLimitError{Unit: "web", Burst: 5, Interval: 10 * time.Second, Last: errors.New("exit status 1")},
			"start limit hit: 5 starts in 10s; last: exit status 1; fix the unit, then run `hermesctl start web`",
			"start limit hit: 5 starts in 10s; last: exit status 1",
			"fix the unit, then run `hermesctl start web`"},
		{"start limit, out of descriptors", &StartLimitError{Unit: "web", Burst: 5, Interval: 10 * time.Second, Last: spawnError(units.Spec{Name: "web"}, fmt.Errorf("spawn web: %w", syscall.EMFILE))},
			"start limit hit: 5 starts in 10s; last: unit web: spawn web: too many open files; " + fdFix + "; then run `hermesctl start web`",
			"start limit hit: 5 starts in 10s; last: unit web: spawn web: too many open files; " + fdFix,
			"then run `hermesctl start web`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			if got := tc.err.Error(); got != tc.text {
				t.Errorf("text:\ngot  %q\nwant %q", got, tc.text)
			}
			s, d := diag.Split(tc.err)
			if s != tc.summary || d != tc.detail {
				t.Errorf("Split:\ngot  %q, %q\nwant %q, %q", s, d, tc.summary, tc.detail)
			}
		})
	}
}
