package reconciler

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
)

// TestStopTakesDownRequirers: a stop by command stops the units that
// require the unit, directly or through each other, names them in
// dependency order, and returns once their groups are empty too; a unit
// nothing requires stops alone.
func TestStopTakesDownRequirers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			spec("db"),
			spec("api", func(s *units.Spec) { s.Requires, s.After = []string{"db"}, []string{"db"} }),
			spec("web", func(s *units.Spec) { s.Requires, s.After = []string{"api"}, []string{"api"} }),
			spec("lone"),
		)
		synctest.Wait()
		res, err := h.r.Act(context.Background(), "db", control.ActionStop)
		if err != nil {
			t.Fatalf("stop db: %v", err)
		}
		if want := []string{"api", "web"}; !slices.Equal(res.Stopped, want) {
			t.Errorf("stop db took down %q, want %q", res.Stopped, want)
		}
		for _, n := range []string{"db", "api", "web"} {
			if u := h.unit(n); u.PGID != 0 || u.State == "running" || u.State == "stopping" {
				t.Errorf("%s after the stop: state %s pgid %d, want its group gone", n, u.State, u.PGID)
			}
		}
		if u := h.unit("lone"); u.State != "running" {
			t.Errorf("lone: state %s, want running (it requires nothing stopped)", u.State)
		}
		res, err = h.r.Act(context.Background(), "lone", control.ActionStop)
		if err != nil || len(res.Stopped) != 0 {
			t.Errorf("stop lone: took down %q (%v), want none", res.Stopped, err)
		}
	})
}

// TestStartJobReportsRun: a start of a job answers with the run it began;
// a start while that run runs answers with the same run; once it has
// ended, a start begins another.
func TestStartJobReportsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startJobs(t, jobSpec("backup", "0 0 1 1 *"))
		synctest.Wait()
		res, err := h.r.Act(context.Background(), "backup", control.ActionStart)
		if err != nil {
			t.Fatalf("start backup: %v", err)
		}
		u := h.unit("backup")
		if res.RunID == "" || u.Job == nil || u.Job.RunID != res.RunID || u.Job.Result != ResultRunning {
			t.Fatalf("start answered run %q; status job %+v, want that run running", res.RunID, u.Job)
		}
		again, err := h.r.Act(context.Background(), "backup", control.ActionStart)
		if err != nil || again.RunID != res.RunID {
			t.Errorf("start during the run: run %q (%v), want %q", again.RunID, err, res.RunID)
		}
		h.fs.last(t, "backup").exit(nil)
		synctest.Wait()
		time.Sleep(time.Second) // run ids carry the start's second
		next, err := h.r.Act(context.Background(), "backup", control.ActionStart)
		if err != nil || next.RunID == "" || next.RunID == res.RunID {
			t.Errorf("start after the run ended: run %q (%v), want a new one", next.RunID, err)
		}
	})
}

// TestStatusDescribesWait: status carries what a client waiting for a
// start needs: type, probe in words, after, and the timeouts in force (a
// oneshot has no start timeout; a stop grace of 0 is the default's).
func TestStatusDescribesWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, units.RoleGateway,
			spec("db", func(s *units.Spec) {
				s.Ready = units.Ready{TCP: "127.0.0.1:5432"}
				s.Timeouts = units.Timeouts{Start: 20 * time.Second}
			}),
			spec("migrate", func(s *units.Spec) {
				s.Type, s.After = units.Oneshot, []string{"db"}
				s.Timeouts = units.Timeouts{Start: 90 * time.Second, Stop: 5 * time.Second, RuntimeMax: time.Minute}
			}),
		)
		synctest.Wait()
		for _, tc := range []struct {
			unit                string
			typ, probe          string
			after               []string
			start, stop, maxRun time.Duration
		}{
			{"db", "simple", "tcp 127.0.0.1:5432", nil, 20 * time.Second, DefaultStopGrace, 0},
			{"migrate", "oneshot", "", []string{"db"}, 0, 5 * time.Second, time.Minute},
		} {
			u := h.unit(tc.unit)
			want := control.Timeouts{Start: tc.start, Stop: tc.stop, RuntimeMax: tc.maxRun}
			if string(u.Type) != tc.typ || u.Probe != tc.probe || !slices.Equal(u.After, tc.after) || u.Timeouts == nil || *u.Timeouts != want {
				t.Errorf("%s: type %q probe %q after %q timeouts %+v, want %q %q %q %+v", tc.unit, u.Type, u.Probe, u.After, u.Timeouts, tc.typ, tc.probe, tc.after, want)
			}
		}
	})
}

func TestProbeWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		rd   units.Ready
		want string
	}{
		{"none", units.Ready{}, ""},
		{"tcp", units.Ready{TCP: "127.0.0.1:8080"}, "tcp 127.0.0.1:8080"},
		{"http", units.Ready{HTTP: "http://127.0.0.1:8080/health"}, "http http://127.0.0.1:8080/health"},
		{"log", units.Ready{Log: "^listening"}, "log /^listening/"},
		{"notify", units.Ready{Notify: true}, "notify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := probeWords(tc.rd); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
