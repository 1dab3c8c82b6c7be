package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The storm section (issue 28, bad scale input): hermesd
// starts N units while the files of ten of them are edited one after
// another (each edit a reload by its watcher, which reads the directory,
// and a restart of the unit edited), and
// `hermesctl status` is asked over and over; the rows are the status's
// p50 and p99 (or max) over the start (and after it, until stormMinStatuses
// were answered), and hermesd's peak RSS (VmHWM).

const (
	stormEditEvery   = 20 * time.Millisecond // an edit of one unit file
	stormStatusPause = 10 * time.Millisecond // between two statuses
	stormSettled     = 15 * time.Second      // no more units running for this long: the start is over
	stormEditUnits   = 10                    // units the storm edits, at most
	// stormMinStatuses is how many statuses the storm lasts for at least: a
	// start of 10 units is over before the first status (hermesctl's own
	// start takes longer), and 100 give a p99.
	stormMinStatuses = 100
)

// stormFigures are one storm trial's figures.
type stormFigures struct {
	status  []time.Duration // hermesctl status
	api     []time.Duration // GET /v1/status from this process: hermesd's part
	floor   []time.Duration // hermesctl --version: a start of hermesctl, which asks hermesd nothing
	edits   int
	running int // units running at the end of the start
	hwmKB   int // hermesd's peak RSS
	took    time.Duration
}

// benchStorm is the storm section: at each size of -sizes (default
// 10,100,1000,5000), a storm trial of hermesd in the first containment
// mode the scale section runs, under root (a fresh temporary directory);
// with envBaseHermesd set, a trial of the base in the same mode follows
// each, so that the two share the machine's load.
func benchStorm(ctx context.Context, root string) ([]Row, error) {
	ns, err := sizes("10,100,1000,5000")
	if err != nil {
		return nil, err
	}
	hs, err := newHermesPeers(ctx, root)
	if err != nil {
		return nil, err
	}
	trials := []*hermesPeer{hs[0]}
	if i := slices.IndexFunc(hs, func(h *hermesPeer) bool { return h.base && h.mode == hs[0].mode }); i >= 0 {
		trials = append(trials, hs[i])
	}
	var rows []Row
	for _, n := range ns {
		setPeerSize(n)
		for _, h := range trials {
			r, err := stormRows(ctx, root, h)
			rows = append(rows, r...)
			if err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

// stormRows runs the storm trial of h at the current size (peerUnits) and
// returns its rows.
func stormRows(ctx context.Context, root string, h *hermesPeer) ([]Row, error) {
	t, err := newPeerTrial(root)
	if err != nil {
		return nil, err
	}
	f, err := stormTrial(ctx, t, h)
	if err = endTrial(t, h, err); err != nil {
		return nil, fmt.Errorf("storm at %d units: %w", peerUnits, err)
	}
	n := peerUnits
	name, p99 := tail(f.status)
	apiTail, apiP99 := tail(f.api)
	ran := ""
	if f.running < n-stormEdited() {
		ran = fmt.Sprintf("; only %d of %d units ran", f.running, n)
	}
	return []Row{
		{
			Figure: fmt.Sprintf("%d units: status during a reload storm during the start, %s", n, h.Name()),
			Value: fmt.Sprintf("p50 %v, %s %v (%s)%s", roundDur(percentile(f.status, 0.5)), name, roundDur(p99),
				atMostDur(p99, 100*time.Millisecond), ran),
			Method: fmt.Sprintf("%d `hermesctl status` one after another (%v apart) from hermesd's start until every unit ran but the edited ones (%v) and at least %d statuses were answered, while the files of units 1 to %d were saved in turn, one every %v (%d edits: each a reload, and a restart of its unit)",
				len(f.status), stormStatusPause, roundDur(f.took), stormMinStatuses, stormEdited(), stormEditEvery, f.edits),
		},
		{
			Figure: fmt.Sprintf("%d units: GET /v1/status during the storm, %s", n, h.Name()),
			Value: fmt.Sprintf("p50 %v, %s %v; hermesctl --version (the floor: starting hermesctl) p50 %v", roundDur(percentile(f.api, 0.5)), apiTail, roundDur(apiP99),
				roundDur(percentile(f.floor, 0.5))),
			Method: "each after a hermesctl status of the row above: the status from this process over the control socket (hermesd's part of it), then `hermesctl --version`, which asks hermesd nothing",
		},
		{
			Figure: fmt.Sprintf("%d units: hermesd's peak RSS in the storm, %s", n, h.Name()),
			Value:  fmt.Sprintf("%.1f MB (%.1f kB per unit)", float64(f.hwmKB)/1024, float64(f.hwmKB)/float64(n)),
			Method: "VmHWM of /proc/PID/status at the end of the storm's start",
		},
	}, nil
}

// stormTrial starts h on t with the storm beside it and stops it cleanly.
func stormTrial(ctx context.Context, t *peerTrial, h *hermesPeer) (stormFigures, error) {
	var f stormFigures
	t0 := time.Now()
	if err := h.Start(ctx, t); err != nil {
		return f, err
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var statusErr error
	enough := make(chan struct{})
	wg.Go(func() { statusErr = stormStatuses(sctx, h, &f, enough) })
	wg.Go(func() { f.edits = stormEdits(sctx, t, h) })
	f.running = stormWait(ctx, t)
	f.took = time.Since(t0)
	select { // the storm goes on until it has its statuses
	case <-enough:
	case <-ctx.Done():
	case <-time.After(peerWait):
	}
	stop()
	wg.Wait()
	var err error
	if f.hwmKB, err = vmHWM(h); err != nil {
		return f, err
	}
	if statusErr != nil {
		return f, statusErr
	}
	if err := h.Stop(ctx); err != nil {
		return f, err
	}
	return f, h.Close()
}

// stormStatuses asks hermesd's status one after another until ctx ends,
// once the control socket is there: in turn `hermesctl status`, GET
// /v1/status on the control socket from this process, and `hermesctl
// --version` (the floor: starting hermesctl). It closes enough once
// stormMinStatuses statuses were answered.
func stormStatuses(ctx context.Context, h *hermesPeer, f *stormFigures, enough chan<- struct{}) error {
	for ctx.Err() == nil {
		if _, err := os.Stat(h.socket()); err == nil {
			break
		}
		time.Sleep(stormStatusPause) // the socket appears with no event to wait on
	}
	api := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", h.socket())
	}}}
	for ctx.Err() == nil {
		d, err := stormCtl(ctx, h, "status")
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			return err
		}
		f.status = append(f.status, d)
		if d, err = stormAPI(ctx, api); err == nil {
			f.api = append(f.api, d)
		} else if ctx.Err() == nil {
			return err
		}
		if d, err = stormCtl(ctx, h, "--version"); err == nil {
			f.floor = append(f.floor, d)
		}
		if len(f.status) == stormMinStatuses {
			close(enough)
		}
		time.Sleep(stormStatusPause)
	}
	if len(f.status) == 0 || len(f.api) == 0 {
		return errors.New("no status answered during the storm")
	}
	return nil
}

// stormCtl times one hermesctl command. Exit status 3 with status's
// table is an answer: some unit is not running yet.
func stormCtl(ctx context.Context, h *hermesPeer, arg string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, h.hermesctl, arg)
	cmd.Env = peerEnv(h.t, "HERMES_SOCKET="+h.socket())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if arg != "status" {
		return took, err
	}
	if !strings.HasPrefix(stdout.String(), "hermesd:") {
		return 0, fmt.Errorf("hermesctl status during the storm: %v: %s", err, stderr.Bytes())
	}
	return took, nil
}

// stormAPI times one GET /v1/status, its body read.
func stormAPI(ctx context.Context, c *http.Client) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://hermesd/v1/status", nil)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/status during the storm: %s", resp.Status)
	}
	return time.Since(t0), nil
}

// stormEdited is how many units the storm edits (units 1 to
// stormEdited): each edit restarts its unit, so a storm over every unit
// would never let the start end.
func stormEdited() int { return min(stormEditUnits, peerUnits-1) }

// stormEdits saves the files of units 1 to stormEdited in turn, a new
// generation each time, until ctx ends, and returns the number of saves.
func stormEdits(ctx context.Context, t *peerTrial, h *hermesPeer) int {
	n := 0
	tick := time.NewTicker(stormEditEvery)
	defer tick.Stop()
	for stormEdited() > 0 {
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
		i := 1 + n%stormEdited()
		n++
		if err := atomicWrite(filepath.Join(t.dir, "units", unitName(i)+".yaml"), h.unit(i, n)); err != nil {
			return n
		}
	}
	return n
}

// stormWait waits until every unit of t but those the storm edits (which
// it keeps restarting) runs, or no more start for stormSettled, or
// peerWait passed; it returns the number running.
func stormWait(ctx context.Context, t *peerTrial) int {
	deadline := time.Now().Add(peerWait)
	best, since := 0, time.Now()
	for {
		n := len(t.running())
		if n > best {
			best, since = n, time.Now()
		}
		if n >= len(t.tags)-stormEdited() || time.Since(since) > stormSettled || time.Now().After(deadline) {
			return n
		}
		select {
		case <-ctx.Done():
			return n
		case <-time.After(peerPoll):
		}
	}
}

// vmHWM is hermesd's peak resident set, in kB.
func vmHWM(h *hermesPeer) (int, error) {
	pid, err := h.Owner()
	if err != nil {
		return 0, err
	}
	return procValue(pid, "status", "VmHWM")
}
