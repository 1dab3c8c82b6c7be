// Package metrics is hermesd's Prometheus endpoint: counters and histograms
// fed by the event stream (Metrics.Observe, the events.Bus's Observe hook),
// by the provider proxy (Metrics.Call) and by the ledger
// (Metrics.LedgerWrite); and gauges read from the daemon's status at each
// scrape (unit states, supervisor, config errors, breakers).
//
// Every Metrics has its own registry: nothing is registered globally, so
// tests (and two daemons in one process) never share a series.
//
// Names follow Prometheus conventions: the hermes_ prefix, base units
// (seconds, bytes), _total for counters. The README lists them.
package metrics

import (
	"context"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/version"
	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// States are the unit states hermes_unit_state has a series for, one per
// unit each: the words of `hermesctl status`.
var States = events.States

// causes are the causes hermes_unit_restarts_total has a series for, each
// at 0 from a unit's first scrape: increase() over a window then sees the
// first restart (a series born at 1 shows no increase).
var causes = []string{events.CauseExit, events.CauseSignal, events.CauseStartTimeout, events.CauseReadiness,
	events.CauseWatchdog, events.CauseRuntimeMax, events.CauseSpawn, events.CauseBudget, events.CauseOther}

// Supervisor modes hermes_supervisor_mode has a series for.
var modes = []units.Mode{units.ModeCgroup, units.ModePGroup}

// Outcomes of a proxied call (hermes_proxy_requests_total's outcome).
const (
	OutcomeCompleted = "completed" // answered in full
	OutcomeCut       = "cut"       // a timeout layer cut it
	OutcomeGaveUp    = "gave_up"   // refused by an open give-up breaker
	OutcomeFailed    = "failed"    // any other error (provider, client gone, shutdown)
)

// Call is one proxied model call, reported once it has ended.
type Call struct {
	Provider, Model string
	Outcome         string // Outcome*
	Stream          bool
	// TTFT is the time from the request to the first content event of a
	// stream; 0 when none came.
	TTFT time.Duration
	// Duration is the whole call, from the request to its end.
	Duration time.Duration
}

// Options configure a Metrics.
type Options struct {
	// Status reads the daemon's status at each scrape; nil leaves the
	// status gauges out.
	Status func(ctx context.Context) (control.Status, error)
	// Bus is the event stream whose subscribers are counted; may be nil.
	Bus *events.Bus
	// Process adds the process and Go runtime collectors (hermesd; not
	// tests, whose values would vary).
	Process bool
}

// Metrics holds hermesd's metrics. Safe for concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	status func(context.Context) (control.Status, error)

	restarts       *prometheus.CounterVec
	startToReady   *prometheus.HistogramVec
	reloads        *prometheus.CounterVec
	reloadDuration prometheus.Histogram
	configErrors   prometheus.Counter
	supRestarts    prometheus.Counter
	ledgerWrite    prometheus.Histogram
	requests       *prometheus.CounterVec
	cuts           *prometheus.CounterVec
	trips          *prometheus.CounterVec
	ttft           *prometheus.HistogramVec
	streamDuration *prometheus.HistogramVec
	events         *prometheus.CounterVec
}

// Buckets, in seconds.
var (
	startBuckets  = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	reloadBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
	ledgerBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2}
	ttftBuckets   = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}
	streamBuckets = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
)

// New returns a Metrics with its own registry.
func New(opts Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), status: opts.Status}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_unit_restarts_total",
		Help: "Automatic restarts of a unit, by the cause of the failure."}, []string{"unit", "cause"})
	m.startToReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_unit_start_to_ready_seconds",
		Help: "Time from a unit's spawn to its readiness.", Buckets: startBuckets}, []string{"unit"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_reloads_total",
		Help: "Reloads of the units directory and config file, by outcome (applied, failed)."}, []string{"outcome"})
	m.reloadDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hermes_reload_duration_seconds",
		Help: "Time to read and apply a reload.", Buckets: reloadBuckets})
	m.configErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "hermes_config_errors_total",
		Help: "Config errors found (a unit file or hermes.yaml that did not load), each counted when it appears."})
	m.supRestarts = prometheus.NewCounter(prometheus.CounterOpts{Name: "hermes_supervisor_restarts_total",
		Help: "Times the death supervisor exited and was restarted."})
	m.ledgerWrite = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hermes_ledger_write_duration_seconds",
		Help: "Time of one ledger update, lock wait included.", Buckets: ledgerBuckets})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_proxy_requests_total",
		Help: "Model calls through the provider proxy, by provider, model and outcome (completed, cut, gave_up, failed)."}, []string{"provider", "model", "outcome"})
	m.cuts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_proxy_cuts_total",
		Help: "Calls cut by a timeout layer, by provider and layer."}, []string{"provider", "layer"})
	m.trips = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_proxy_breaker_trips_total",
		Help: "Give-up breakers that opened, by provider and model."}, []string{"provider", "model"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_proxy_time_to_first_token_seconds",
		Help: "Time from a streaming request to its first content event.", Buckets: ttftBuckets}, []string{"provider", "model"})
	m.streamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_proxy_stream_duration_seconds",
		Help: "Duration of a streaming call, from the request to its end.", Buckets: streamBuckets}, []string{"provider", "model"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_events_total",
		Help: "Events published to the event stream (hermesctl events), by kind."}, []string{"kind"})
	for _, c := range []prometheus.Collector{m.reloads, m.reloadDuration, m.configErrors,
		m.supRestarts, m.ledgerWrite, m.requests, m.cuts, m.trips, m.ttft, m.streamDuration, m.events} {
		f(c)
	}
	for _, o := range []string{"applied", "failed"} {
		m.reloads.WithLabelValues(o)
	}
	if b := opts.Bus; b != nil {
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hermes_event_subscribers",
			Help: "Readers following the event stream (events -f, status --watch, top)."}, func() float64 { return float64(b.Subscribers()) }))
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hermes_event_subscribers_dropped_total",
			Help: "Event stream readers dropped for falling behind."}, func() float64 { return float64(b.Dropped()) }))
	}
	if m.status != nil {
		// The per-unit vectors are collected after the status read that
		// makes their series (born), so that they exist at the first scrape.
		f(statusCollector{m})
	} else {
		f(m.restarts)
		f(m.startToReady)
	}
	bi := version.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "hermes_build_info",
		Help:        "1, labelled with the version, VCS revision and Go version hermesd was built from.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.Go}})
	build.Set(1)
	f(build)
	if opts.Process {
		f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		f(collectors.NewGoCollector())
	}
	return m
}

// Registry is the registry the metrics are in, for a handler or a test.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Observe counts an event; it is the events.Bus's Observe hook (quick,
// never blocks).
func (m *Metrics) Observe(e events.Event) {
	if e.Kind != events.Overflow {
		m.events.WithLabelValues(e.Kind.String()).Inc()
	}
	switch e.Kind {
	case events.UnitRestart:
		m.restarts.WithLabelValues(e.Unit, e.Cause).Inc()
	case events.UnitReady:
		m.startToReady.WithLabelValues(e.Unit).Observe(e.Duration.Seconds())
	case events.Reload:
		m.reloads.WithLabelValues(e.Outcome).Inc()
		m.reloadDuration.Observe(e.Duration.Seconds())
	case events.ConfigError:
		m.configErrors.Inc()
	case events.SupervisorRestart:
		m.supRestarts.Inc()
	case events.Cut:
		m.cuts.WithLabelValues(e.Provider, e.Layer).Inc()
	case events.BreakerTrip:
		m.trips.WithLabelValues(e.Provider, e.Model).Inc()
	}
}

// Call counts a proxied call.
func (m *Metrics) Call(c Call) {
	m.requests.WithLabelValues(c.Provider, c.Model, c.Outcome).Inc()
	if !c.Stream {
		return
	}
	if c.TTFT > 0 {
		m.ttft.WithLabelValues(c.Provider, c.Model).Observe(c.TTFT.Seconds())
	}
	if c.Outcome != OutcomeGaveUp {
		m.streamDuration.WithLabelValues(c.Provider, c.Model).Observe(c.Duration.Seconds())
	}
}

// LedgerWrite records one ledger update's duration.
func (m *Metrics) LedgerWrite(d time.Duration) { m.ledgerWrite.Observe(d.Seconds()) }

// statusCollector reads the daemon's status at each scrape.
type statusCollector struct{ m *Metrics }

var (
	descUnitState = prometheus.NewDesc("hermes_unit_state",
		"1 for the state a unit is in, 0 for the others (one series per unit and state).", []string{"unit", "state"}, nil)
	descUnitReady = prometheus.NewDesc("hermes_unit_ready",
		"1 when a unit is ready.", []string{"unit"}, nil)
	descUnitRSS = prometheus.NewDesc("hermes_unit_resident_memory_bytes",
		"Resident memory of a unit's main process (the pid status shows), not of the rest of its group.", []string{"unit"}, nil)
	descUnitMemory = prometheus.NewDesc("hermes_unit_memory_bytes",
		"Memory of the whole unit, 0 while it runs nothing. In cgroup mode with the memory controller enabled: its cgroup's memory.current "+
			"(page cache and kernel memory included). Else (pgroup mode, or a hierarchy without the memory controller): the resident sets "+
			"summed over its processes (its cgroup's; in pgroup mode its process group's and its main process's group's), a shared page counted once per process.",
		[]string{"unit"}, nil)
	descUnitCPU = prometheus.NewDesc("hermes_unit_cpu_seconds_total",
		"CPU time (user + system) of the whole unit's current run, from 0 at each start. In cgroup mode: its cgroup's cpu.stat usage_usec, "+
			"which keeps the time of processes that exited. In pgroup mode: the sum over its live processes, each with the children it waited for; "+
			"the time of a process that exited unwaited for by the unit is lost, and the sum then falls (rate() reads a fall as a reset).",
		[]string{"unit"}, nil)
	descUnitStart = prometheus.NewDesc("hermes_unit_start_time_seconds",
		"Start time of a unit's main process since the Unix epoch (absent while it runs none).", []string{"unit"}, nil)
	descUnitExit = prometheus.NewDesc("hermes_unit_last_exit_status",
		"Exit status of the latest run's main process once it ended, 128+N when killed by signal N (absent before one ended, "+
			"and when unknown: a re-adopted group's leader is not hermesd's child; a forking unit's launcher exits 0 when its daemon starts).", []string{"unit"}, nil)
	descJobRuns = prometheus.NewDesc("hermes_job_runs_total",
		"Runs of a job (a unit with schedule:) that ended since hermesd started, by result (success, failed, budget_exceeded, stopped); every result at 0 from the job's first scrape.",
		[]string{"unit", "result"}, nil)
	descJobSkipped = prometheus.NewDesc("hermes_job_skipped_total",
		"Fires of a job skipped because its previous run was still running.", []string{"unit"}, nil)
	descJobDuration = prometheus.NewDesc("hermes_job_last_run_duration_seconds",
		"How long a job's latest run lasted, or has lasted while it runs (absent before its first run).", []string{"unit"}, nil)
	descJobBudget = prometheus.NewDesc("hermes_job_budget_seconds",
		"The run budget of a job's latest run (absent without one).", []string{"unit"}, nil)
	descJobBudgetUsed = prometheus.NewDesc("hermes_job_last_run_budget_used_ratio",
		"The part of its run budget a job's latest run used (its duration over its budget; 1 when stopped at the budget; absent without one).", []string{"unit"}, nil)
	descJobNext = prometheus.NewDesc("hermes_job_next_run_time_seconds",
		"When a job's schedule fires next, since the Unix epoch.", []string{"unit"}, nil)
	descSupMode = prometheus.NewDesc("hermes_supervisor_mode",
		"1 for the containment mode of the death supervisor (cgroup or pgroup).", []string{"mode"}, nil)
	descSupHealthy = prometheus.NewDesc("hermes_supervisor_healthy",
		"1 while the death supervisor is ok or idle, 0 while it is failing.", nil, nil)
	descSupGroups = prometheus.NewDesc("hermes_supervisor_groups",
		"Process groups registered with the death supervisor.", nil, nil)
	descConfigErrs = prometheus.NewDesc("hermes_config_errors",
		"Files that do not load now (their units keep the last good version).", nil, nil)
	descBreakers = prometheus.NewDesc("hermes_proxy_breakers",
		"Give-up breakers (one per session) by provider, model and state (open, closed).", []string{"provider", "model", "state"}, nil)
	descStreak = prometheus.NewDesc("hermes_proxy_breaker_streak_max",
		"The longest streak of consecutive stale kills among the sessions of a provider and model.", []string{"provider", "model"}, nil)
	descScrapeErr = prometheus.NewDesc("hermes_status_up",
		"1 when the daemon's status could be read for this scrape.", nil, nil)
)

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	c.m.restarts.Describe(ch)
	c.m.startToReady.Describe(ch)
	for _, d := range []*prometheus.Desc{descUnitState, descUnitReady, descUnitRSS, descUnitMemory, descUnitCPU, descUnitStart, descUnitExit,
		descJobRuns, descJobSkipped, descJobDuration, descJobBudget, descJobBudgetUsed, descJobNext, descSupMode, descSupHealthy,
		descSupGroups, descConfigErrs, descBreakers, descStreak, descScrapeErr} {
		ch <- d
	}
}

// scrapeTimeout bounds the status read of one scrape.
const scrapeTimeout = 5 * time.Second

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	st, err := c.m.status(ctx)
	defer c.m.startToReady.Collect(ch)
	defer c.m.restarts.Collect(ch)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, 1)
	now := time.Now()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	seen := map[string]bool{}
	var use usage
	for _, u := range st.Units {
		if seen[u.Name] { // a released group under a unit's name: the unit's row counts
			continue
		}
		seen[u.Name] = true
		mem, cpu := use.of(u)
		gauge(descUnitMemory, float64(mem), u.Name)
		ch <- prometheus.MustNewConstMetric(descUnitCPU, prometheus.CounterValue, cpu.Seconds(), u.Name)
		for _, s := range States {
			gauge(descUnitState, b2f(u.State == s), u.Name, string(s))
		}
		gauge(descUnitReady, b2f(u.Ready), u.Name)
		gauge(descUnitRSS, float64(u.RSS), u.Name)
		if u.Uptime > 0 {
			gauge(descUnitStart, float64(now.Add(-u.Uptime).UnixMilli())/1e3, u.Name)
		}
		if u.ExitStatus != nil {
			gauge(descUnitExit, float64(*u.ExitStatus), u.Name)
		}
		if u.Job != nil {
			collectJob(ch, u.Name, u.Job)
		}
		c.m.born(u.Name)
	}
	for _, md := range modes {
		gauge(descSupMode, b2f(st.Supervisor.Mode == md), string(md))
	}
	gauge(descSupHealthy, b2f(st.Supervisor.Health.Well()))
	gauge(descSupGroups, float64(st.Supervisor.Groups))
	gauge(descConfigErrs, float64(len(st.ConfigErrors)))
	if st.Proxy != nil {
		type pm struct{ provider, model string }
		open, closed, streak := map[pm]int{}, map[pm]int{}, map[pm]int{}
		for _, b := range st.Proxy.Breakers {
			k := pm{b.Provider, b.Model}
			if b.Tripped {
				open[k]++
			} else {
				closed[k]++
			}
			streak[k] = max(streak[k], b.Streak)
		}
		for k, n := range streak {
			gauge(descBreakers, float64(open[k]), k.provider, k.model, "open")
			gauge(descBreakers, float64(closed[k]), k.provider, k.model, "closed")
			gauge(descStreak, float64(n), k.provider, k.model)
		}
	}
}

// jobResults are the results hermes_job_runs_total has a series for, each
// at 0 from a job's first scrape: the words of control.Job.Runs, and the
// label value of each (no spaces in a label).
var jobResults = []struct {
	word  control.JobResult
	label string
}{
	{control.ResultSuccess, "success"}, {control.ResultFailed, "failed"}, {control.ResultBudgetExceeded, "budget_exceeded"}, {control.ResultStopped, "stopped"},
}

// collectJob sends the series of the job unit.
func collectJob(ch chan<- prometheus.Metric, unit string, j *control.Job) {
	for _, r := range jobResults {
		ch <- prometheus.MustNewConstMetric(descJobRuns, prometheus.CounterValue, float64(j.Runs[r.word]), unit, r.label)
	}
	ch <- prometheus.MustNewConstMetric(descJobSkipped, prometheus.CounterValue, float64(j.Skipped), unit)
	if !j.Next.IsZero() {
		ch <- prometheus.MustNewConstMetric(descJobNext, prometheus.GaugeValue, float64(j.Next.Unix()), unit)
	}
	if j.LastRun == "" {
		return
	}
	ch <- prometheus.MustNewConstMetric(descJobDuration, prometheus.GaugeValue, j.Duration.Seconds(), unit)
	if j.Budget > 0 {
		ch <- prometheus.MustNewConstMetric(descJobBudget, prometheus.GaugeValue, j.Budget.Seconds(), unit)
		ch <- prometheus.MustNewConstMetric(descJobBudgetUsed, prometheus.GaugeValue, min(j.Duration.Seconds()/j.Budget.Seconds(), 1), unit)
	}
}

// usage reads the whole-unit memory and CPU of one scrape. The process
// table is read once, at the first unit that needs it (one in pgroup
// mode, or in a cgroup without the memory controller), however many units
// there are: a scrape costs one read of /proc/PID/stat per process on the
// machine, plus two small files per unit in cgroup mode.
type usage struct {
	snap *proc.Snapshot
	err  error // of the read of snap
}

func (s *usage) snapshot() *proc.Snapshot {
	if s.snap == nil && s.err == nil {
		s.snap, s.err = proc.ReadSnapshot()
	}
	return s.snap
}

// of is u's memory and CPU time: of its cgroup, else of its process group
// and of its main process's (a forking unit's daemon may have left the
// group); 0 when it has neither, or its use cannot be read (another
// platform: see proc.ReadSnapshot).
func (s *usage) of(u control.Unit) (memory int64, cpu time.Duration) {
	if u.Cgroup != "" {
		use, hasMemory, err := proc.CgroupUsage(u.Cgroup)
		if err != nil {
			return 0, 0
		}
		if !hasMemory {
			if pids, err := proc.CgroupProcs(u.Cgroup); err == nil && s.snapshot() != nil {
				use.Memory = s.snap.Processes(pids).Memory
			}
		}
		return use.Memory, use.CPU
	}
	if u.PGID <= 0 || s.snapshot() == nil {
		return 0, 0
	}
	use := s.snap.Group(u.PGID)
	if pg, ok := s.snap.PGID(u.PID); ok && pg != u.PGID {
		g := s.snap.Group(pg)
		use.Memory, use.CPU = use.Memory+g.Memory, use.CPU+g.CPU
	}
	return use.Memory, use.CPU
}

// born makes the per-unit counters and histograms of unit exist, at 0,
// from its first scrape on (a unit that never restarted has
// hermes_unit_restarts_total 0 for every cause, not no series).
func (m *Metrics) born(unit string) {
	for _, c := range causes {
		m.restarts.WithLabelValues(unit, c)
	}
	m.startToReady.WithLabelValues(unit)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
