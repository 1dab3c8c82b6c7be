package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

// writeJobsAndProxy prints the jobs section (schedule, next fire, latest
// run and its result) and the provider proxy section (listen address,
// providers, give-up breakers) of `hermesctl status`, each only when there
// is something to show.
func writeJobsAndProxy(w io.Writer, st control.Status) {
	jobs := table{{{text: "JOB"}, {text: "SCHEDULE"}, {text: "NEXT"}, {text: "LAST RUN"}, {text: "RESULT"}, {text: "SKIPPED"}}}
	for _, u := range st.Units {
		j := u.Job
		if j == nil {
			continue
		}
		next := "-"
		if !j.Next.IsZero() {
			next = j.Next.Local().Format(time.RFC3339)
		}
		jobs = append(jobs, []cell{{text: u.Name}, {text: j.Schedule}, {text: next}, {text: dash(j.LastRun)}, {text: dash(j.Result)}, {text: strconv.Itoa(j.Skipped)}})
	}
	if len(jobs) > 1 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "jobs:")
		jobs.write(w, "  ")
	}
	p := st.Proxy
	if p == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "proxy:      listening on %s, providers %s, %d %s\n", p.Listen, dash(strings.Join(p.Providers, ", ")),
		len(p.Breakers), plural(len(p.Breakers), "session", "sessions"))
	if l := p.Limits; l.MaxConnections > 0 { // hermesd that reports its limits
		fmt.Fprintf(w, "            %d/%d connections (%d refused), %s of %s in request bodies, bodies up to %s; timeouts: headers %s, body %s, idle %s\n",
			p.Connections, l.MaxConnections, p.Refused, units.Size(p.BodyBytes), units.Size(l.MaxBodiesInFlight), units.Size(l.MaxRequestBody),
			l.ReadHeaderTimeout, l.BodyReadTimeout, l.IdleTimeout)
	}
	if len(p.Breakers) == 0 {
		return
	}
	t := table{{{text: "SESSION"}, {text: "PROVIDER"}, {text: "MODEL"}, {text: "MODEL STREAK"}, {text: "PROVIDER STREAK"}, {text: "BREAKER"}}}
	for _, b := range p.Breakers {
		state := "closed"
		switch {
		case b.Threshold == 0:
			state = "disabled"
		case b.Tripped && b.TrippedBy != timeouts.ScopeNone:
			state = "tripped by " + b.TrippedBy.String() + " streak"
		case b.Tripped:
			state = "tripped"
		}
		t = append(t, []cell{{text: b.Session}, {text: b.Provider}, {text: dash(b.Model)}, {text: fmt.Sprintf("%d/%d", b.Streak, b.Threshold)},
			{text: fmt.Sprintf("%d/%d", b.ProviderStreak, b.Threshold)}, {text: state}})
	}
	t.write(w, "  ")
}
