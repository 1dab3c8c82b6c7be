package reconciler

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/testkit"
)

// TestReleasedRowGoes: a released group is listed as released while it
// runs; once it has ended its row goes, and its unit stays inactive.
func TestReleasedRowGoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(pgid int) // ends the released group
	}{
		{"leader and group killed", func(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }},
		{"leader asked to stop", func(pgid int) { syscall.Kill(pgid, syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLive(t, map[string]string{"web.yaml": unitYAML("sleep", "")})
			m := l.waitFor("web running", running("web"))
			pgid := m["web"].PGID
			t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
			if _, err := l.r.Release(t.Context(), "web"); err != nil {
				t.Fatal(err)
			}
			released := func(m []control.Unit) *control.Unit {
				for i := range m {
					if m[i].State == "released" && m[i].PGID == pgid {
						return &m[i]
					}
				}
				return nil
			}
			st, err := l.r.Status(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if u := released(st.Units); u == nil || !u.Ready {
				t.Fatalf("status after the release: %+v, want a released row for group %d, ready", st.Units, pgid)
			}
			tc.kill(pgid)
			// The row goes by itself, with no status asked: polled on
			// Run's goroutine, since dropping it sends no event outside.
			testkit.Eventually(t, 15*time.Second, fmt.Sprintf("the released row of group %d gone once the group ended", pgid), func() bool {
				n := 1
				if err := l.r.do(t.Context(), func(context.Context) { n = len(l.r.released) }); err != nil {
					t.Fatal(err)
				}
				return n == 0
			})
			st, err = l.r.Status(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if u := released(st.Units); u != nil {
				t.Errorf("status once the group ended: %+v, want no released row", *u)
			}
			if u := unitNamed(st.Units, "web"); u == nil || u.State != "inactive" {
				t.Errorf("web once its released group ended: %+v, want inactive", u)
			}
			// Nothing starts by itself: the unit stays inactive.
			var enabled bool
			l.r.do(t.Context(), func(ctx context.Context) { enabled = l.r.units["web"].enabled; _ = ctx })
			if enabled {
				t.Errorf("web is wanted running after its released group ended, want it left inactive")
			}
		})
	}
}

func unitNamed(us []control.Unit, name string) *control.Unit {
	for i := range us {
		if us[i].Name == name {
			return &us[i]
		}
	}
	return nil
}
