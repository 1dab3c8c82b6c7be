package main

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/units"
	fastjson "github.com/segmentio/encoding/json"
)

// manyUnits is the status of n running units as hermesd answers it
// (about 360 bytes a unit in JSON), a few of them restarted and failed.
func manyUnits(n int) control.Status {
	st := control.Status{
		Daemon:     control.Daemon{PID: 4242, Role: "gateway", Started: time.Now().Add(-time.Hour), Units: "/srv/hermes/units", State: "/srv/hermes/state"},
		Supervisor: control.Supervisor{PID: 4243, Groups: n, Mode: "cgroup", Health: control.Health{State: control.HealthOK}},
	}
	exit := 143
	for i := range n {
		u := control.Unit{
			Name: fmt.Sprintf("u%04d", i), State: control.StateRunning, PID: 100000 + i, PGID: 100000 + i,
			Ownership: units.Owned, Ready: true, Uptime: time.Duration(i) * time.Second, RSS: int64(i) << 12,
			Log: fmt.Sprintf("/srv/hermes/state/logs/u%04d.log", i), Type: units.Simple,
			Timeouts: &control.Timeouts{Start: 90 * time.Second, Stop: 3 * time.Second},
		}
		if i%10 == 0 {
			u.State, u.Restarts, u.ExitStatus = control.StateFailed, 3, &exit
			u.Error = "exited with status 143; restarting in 1.085s"
		}
		st.Units = append(st.Units, u)
	}
	return st
}

// BenchmarkStatus1000 is what `hermesctl status` does with hermesd's
// answer at 1000 units: decode it, make its texts inert, write the table
// (through a pipe: no width; and on a terminal of 120 columns) and find
// its exit status.
func BenchmarkStatus1000(b *testing.B) {
	data, err := json.Marshal(manyUnits(1000))
	if err != nil {
		b.Fatal(err)
	}
	for _, width := range []int{0, 120} {
		b.Run(fmt.Sprintf("width %d", width), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var st control.Status
				if err := fastjson.Unmarshal(data, &st); err != nil { // as control's client decodes it

					b.Fatal(err)
				}
				inertAll(&st)
				writeStatus(io.Discard, st, look{width: width, now: time.Now()})
				statusExit(st, false)
			}
		})
	}
}
