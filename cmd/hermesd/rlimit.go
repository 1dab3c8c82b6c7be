package main

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/diag"
	"github.com/hermes-units/hermes/internal/fdreserve"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/reconciler"
	"github.com/hermes-units/hermes/units"
)

// Descriptors (issue: a daemon out of descriptors marks units failed for
// good with EMFILE on their log or the ledger lock). hermesd raises its
// soft RLIMIT_NOFILE to the hard limit at start and, on every load,
// compares the limit with what the declared units and the provider proxy
// may hold at once, and warns when it falls short.
const (
	// fdBase is what hermesd holds whatever it runs: standard streams,
	// the state lock, the ledger and its lock, the control socket and its
	// connections, the notify socket, the watches, the supervisor's pipe,
	// the clock watch, the proxy's listener.
	fdBase = 64
	// fdHeld is what a running unit holds whatever it prints: its pidfd
	// and the read ends of its output pipes (stamped logs; a unit that
	// writes its log itself holds only the pidfd), and its sd_notify
	// socket when it has one of its own (fdNotify, counted apart). Its
	// log file is open only while it prints, at most
	// reconciler.MaxOpenLogs of them for all units at once (fdLogs).
	fdHeld = 3
	// fdNotify is the socket of a unit that listens for sd_notify
	// (ready: notify, a watchdog), in the per-unit notify mode.
	fdNotify = 1
	// fdSpawn is a unit's peak while it spawns: its log file, both ends
	// of its output pipes, the start gate's pipe, its cgroup directory
	// and its pidfd.
	fdSpawn = 9
)

// fdLogs is how many log files the copiers of n running units may open
// on top of what they hold (reconciler.logSink).
func fdLogs(n int) int { return min(n, reconciler.MaxOpenLogs) }

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit, less one,
// and returns the limits in force. Less one, as the Go runtime does at
// start: os/exec then gives each unit the soft limit hermesd was started
// with (a unit built around select(2) expects 1024), which it does only
// while the soft limit is still the runtime's. prlimit(2) is called
// directly for the same reason (syscall.Setrlimit would switch that off;
// elsewhere x/sys/unix's setrlimit, which does not; see rlimit_*.go).
// The runtime has normally raised it already; this makes sure, whatever
// lowered it since.
func raiseNoFile() (soft, hard uint64, err error) {
	soft, hard, err = readNoFile()
	if err != nil {
		return 0, 0, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	if hard > 1 && soft < hard-1 {
		if err := writeNoFile(hard-1, hard); err != nil {
			return soft, hard, fmt.Errorf("raise RLIMIT_NOFILE from %d to %d: %w", soft, hard-1, err)
		}
		soft = hard - 1
	}
	return soft, hard, nil
}

// fdNeed is how many descriptors hermesd may hold at once with n units,
// notifying of them with a notify socket of their own, and a proxy
// capped at conns connections (0: proxy off): what the running units
// hold, the log files they may have open, the spawns under way
// (fdSpawnMargin), and the proxy's connections.
func fdNeed(n, notifying, conns int) uint64 {
	return uint64(fdBase + n*fdHeld + notifying*fdNotify + fdLogs(n) + min(n, fdSpawnMargin)*fdSpawn + conns*proxy.FDsPerConn)
}

// notifying is how many of specs listen for sd_notify: each has a socket
// of its own in the per-unit mode (counted in either mode: the shared
// one needs less).
func notifying(specs []*units.Spec) int {
	n := 0
	for _, s := range specs {
		if s.Ready.Notify || s.Timeouts.Watchdog > 0 {
			n++
		}
	}
	return n
}

// proxyConns is the proxy's connection cap under config c
// (gateway.max_connections), 0 when the proxy is off.
func proxyConns(on bool, c units.Config) int {
	if !on {
		return 0
	}
	if c.Gateway.MaxConnections > 0 {
		return c.Gateway.MaxConnections
	}
	return units.DefaultMaxConnections
}

// What each listener may hold (fdreserve.Limits): the control API's
// connections are the owner's, and rank first; the proxy leaves
// fdControlKeep descriptors under the reserve to them; metrics, which a
// scraper reads on one or two connections, the same, and holds at most
// metricsConns.
const (
	fdControlKeep = 64
	metricsConns  = 16
)

var (
	controlLimits = fdreserve.Limits{Owner: true}
	proxyLimits   = fdreserve.Limits{Keep: fdControlKeep}
	metricsLimits = fdreserve.Limits{Keep: fdControlKeep, MaxConns: metricsConns}
)

// fdReserve is what the listeners (proxy, metrics) leave to the rest of
// hermesd when pending units are still to take their descriptors and
// running units hold theirs (fdWatch.pending): fdBase, each pending
// unit's peak (fdSpawn), and the log files the running ones may open
// when they print (fdLogs): those are not open yet. A flood of
// connections to any listener then never keeps a unit from starting or
// from opening its log. The control API, its owner's, is held to the
// limit instead (fdreserve.Limits.Owner).
func fdReserve(pending, running int) int { return fdBase + pending*fdSpawn + fdLogs(running) }

// newFDWatch is the fdWatch of limits soft and hard, its reserve set for
// no unit yet (each load sets it again).
func newFDWatch(soft, hard uint64, proxyOn bool, log *slog.Logger) *fdWatch {
	w := &fdWatch{soft: soft, hard: hard, proxyOn: proxyOn, log: log}
	w.reserve.Set(soft, fdReserve(0, 0))
	return w
}

// fdWatch warns, on a load, when the descriptor limit cannot serve the
// declared units and the proxy's cap; once per shortfall, so that a reload
// that changes nothing says nothing again.
type fdWatch struct {
	soft, hard uint64
	proxyOn    bool
	log        *slog.Logger
	// reserve keeps the listeners' connections off the descriptors the
	// units still need; a load and each unit that starts or ends set it
	// again (see pending).
	reserve fdreserve.Reserve
	mu      sync.Mutex
	warned  uint64 // guarded by mu; the need last warned about, 0 none
	// The last load's specs (Loaded.Specs: nobody changes them), their
	// names, and how many of them are notifying; guarded by mu.
	specs  []*units.Spec
	names  map[string]bool
	notify int
	// holding names the declared units whose run holds its descriptors (a
	// pid); guarded by mu.
	holding map[string]bool
}

// fdSpawnMargin is how many running units the reserve keeps a spawn's
// peak for besides (a restart opens its log, pipes and start gate anew).
const fdSpawnMargin = 16

// pending is how many units the reserve is kept a spawn's peak for:
// those declared that hold nothing yet, and fdSpawnMargin more. A running
// unit's descriptors are open already, below the number of any
// connection accepted since (the kernel gives the lowest free):
// reserving them again shut every listener out once a few thousand units
// ran; only the log files they may open are kept for them (fdReserve).
// mu held.
func (w *fdWatch) pending() int {
	return max(len(w.specs)-len(w.holding), 0) + min(len(w.specs), fdSpawnMargin)
}

// observe is a Publish hook: a unit.state event says whether its unit's
// run holds its descriptors now (a pid), and the reserve follows. A unit
// the last load did not declare is not counted (a removed unit's last
// events come after the load that removed it).
func (w *fdWatch) observe(e events.Event) {
	if e.Kind != events.UnitState {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holding == nil {
		w.holding = map[string]bool{}
	}
	if e.PID != 0 {
		if w.names == nil || w.names[e.Unit] {
			w.holding[e.Unit] = true
		}
	} else {
		delete(w.holding, e.Unit)
	}
	w.reserve.Set(w.soft, fdReserve(w.pending(), len(w.holding)))
}

// check is a loader hook (see loader): it runs on every load, and looks
// at the units the load changed (seen).
func (w *fdWatch) check(c units.Config, l *reconciler.Loaded) {
	conns := proxyConns(w.proxyOn, c)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen(l.Specs) {
		for name := range w.holding {
			if !w.names[name] { // removed: its last event may never come
				delete(w.holding, name)
			}
		}
	}
	need := fdNeed(len(l.Specs), w.notify, conns)
	w.reserve.Set(w.soft, fdReserve(w.pending(), len(w.holding)))
	if need <= w.soft {
		w.warned = 0
		return
	}
	if need == w.warned {
		return
	}
	w.warned = need
	short := &diag.Error{
		What: fmt.Sprintf("descriptor limit %d (RLIMIT_NOFILE, hard limit %d) cannot serve %d units and the proxy's %d connections: about %d needed", w.soft, w.hard, len(l.Specs), conns, need),
		Fix:  "raise the hard limit (LimitNOFILE= in a systemd unit, `ulimit -Hn` as root, /etc/security/limits.conf) or declare fewer units",
	}
	w.log.Warn(short.Error(), "part", "limits", "limit", w.soft, "need", need)
}

// seen makes specs w's last load: it counts their notifying units from
// the last load's count, looking only at the specs that are not the last
// load's at their place (a load of one edit among thousands of units
// looks at one), and at them all, with their names, when the names may
// have changed (a unit added, removed or moved: moved true). mu held.
func (w *fdWatch) seen(specs []*units.Spec) (moved bool) {
	last := w.specs
	w.specs = specs
	if w.names != nil && len(specs) == len(last) {
		n, same := w.notify, true
		for i, s := range specs {
			if s == last[i] {
				continue
			}
			if s.Name != last[i].Name {
				same = false
				break
			}
			n += notifying(specs[i:i+1]) - notifying(last[i:i+1])
		}
		if same {
			w.notify = n
			return false
		}
	}
	w.notify = notifying(specs)
	w.names = make(map[string]bool, len(specs))
	for _, s := range specs {
		w.names[s.Name] = true
	}
	return true
}
