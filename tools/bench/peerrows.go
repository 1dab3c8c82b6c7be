package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The peers and scale sections' rows: at each size, per operation, each
// manager's median and its cost per unit; hermesd's rows add the ratio
// to process-compose and to the floor measured in the same run, the
// others' their ratio to hermesd.

// peerRows are the rows of one size.
func peerRows(peers []peer, figs []*peerFigures) []Row {
	var rows []Row
	refs := ratioRefs(peers, figs)
	for i, p := range peers {
		if err := figs[i].failed; err != nil {
			rows = append(rows, Row{Figure: fmt.Sprintf("%d units: every row, %s", peerUnits, p.Name()), Value: "failed: " + oneLineOf(err),
				Method: "a trial of this manager failed at this size; its other trials here were not played, and hermesd's rows have no ratio to it"})
		}
	}
	for _, op := range peerOps {
		for i, p := range peers {
			if !plays(p, op) || figs[i].failed != nil {
				continue
			}
			rows = append(rows, Row{
				Figure: fmt.Sprintf("%d units: %s, %s", peerUnits, op, p.Name()),
				Value:  peerValue(op, p, figs[i], figs[0], refs),
				Method: peerMethod(op, p),
			})
		}
	}
	return append(rows, memoryRows(peers, figs)...)
}

// ratioRef is a manager hermesd's rows compare with.
type ratioRef struct {
	name string
	figs *peerFigures
}

// ratioRefs are process-compose and the floor, where they ran.
func ratioRefs(peers []peer, figs []*peerFigures) []ratioRef {
	var refs []ratioRef
	for i, p := range peers {
		if n := p.Name(); (n == "process-compose" || n == "floor") && figs[i].failed == nil {
			refs = append(refs, ratioRef{n, figs[i]})
		}
	}
	return refs
}

func isHermes(p peer) bool { return strings.HasPrefix(p.Name(), "hermesd") }

func peerValue(op string, p peer, f, base *peerFigures, refs []ratioRef) string {
	ds := f.samples(op)
	var v string
	if op == "owner SIGKILL" {
		alive := 0
		for _, n := range f.survivors {
			alive += n
		}
		if alive > 0 {
			v = fmt.Sprintf("units outlive it: %d of %d still running %v after the SIGKILL, over %d trials; ", alive, peerUnits*len(f.survivors), peerKilled, len(f.survivors))
		}
		if len(ds) == 0 {
			return v + "no trial had every unit gone"
		}
	}
	if len(ds) == 0 {
		return v + "not measured"
	}
	med := percentile(ds, 0.5)
	tn, tv := tail(ds)
	v += fmt.Sprintf("median %v (%v per unit), %s %v over %d trials", roundDur(med), perUnit(med), tn, roundDur(tv), len(ds))
	if !isHermes(p) {
		if b := base.samples(op); len(b) > 0 {
			v += fmt.Sprintf("; %.2f× hermesd's median", float64(med)/float64(percentile(b, 0.5)))
		}
		return v
	}
	for _, r := range refs {
		if rs := r.figs.samples(op); len(rs) > 0 {
			v += fmt.Sprintf("; %.2f× %s's", float64(med)/float64(percentile(rs, 0.5)), r.name)
		}
	}
	return v
}

// perUnit is d shared among the units, rounded for display.
func perUnit(d time.Duration) time.Duration {
	u := d / time.Duration(peerUnits)
	switch {
	case u >= time.Millisecond:
		return u.Round(10 * time.Microsecond)
	case u >= time.Microsecond:
		return u.Round(time.Microsecond / 10)
	}
	return u
}

// memoryRows are each manager's RSS (and a supervisor's PSS) with every
// unit running.
func memoryRows(peers []peer, figs []*peerFigures) []Row {
	var rows []Row
	var pcRSS int
	for i, p := range peers {
		if p.Name() == "process-compose" && len(figs[i].rssKB) > 0 && figs[i].failed == nil {
			pcRSS = medianInt(figs[i].rssKB)
		}
	}
	for i, p := range peers {
		f := figs[i]
		if len(f.rssKB) == 0 || f.failed != nil {
			continue
		}
		rss := medianInt(f.rssKB)
		v := fmt.Sprintf("median %.1f MB (%.1f kB per unit) over %d trials", float64(rss)/1024, float64(rss)/float64(peerUnits), len(f.rssKB))
		if pcRSS > 0 && p.Name() != "process-compose" {
			v += fmt.Sprintf("; %.2f× process-compose's", float64(rss)/float64(pcRSS))
		}
		rows = append(rows, Row{Figure: fmt.Sprintf("%d units: memory, %s", peerUnits, p.Name()), Value: v,
			Method: fmt.Sprintf("Rss of /proc/PID/smaps_rollup of %s (%s) with every unit running, read once per trial", p.Name(), p.Describe().owner)})
		if len(f.supPssKB) > 0 {
			pss := medianInt(f.supPssKB)
			rows = append(rows, Row{Figure: fmt.Sprintf("%d units: supervisor PSS, %s", peerUnits, p.Name()),
				Value:  fmt.Sprintf("median %d kB (%.2f kB per unit) over %d trials", pss, float64(pss)/float64(peerUnits), len(f.supPssKB)),
				Method: "Pss of /proc/PID/smaps_rollup of the /bin/sh death supervisor, every unit registered, read once per trial"})
		}
	}
	return rows
}

func medianInt(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func peerMethod(op string, p peer) string {
	switch op {
	case "start":
		return fmt.Sprintf("%d idle `sleep` units, fresh config dir; clock from starting %s to every unit's sleep seen running (/proc scanned every %v); two starts per round", peerUnits, p.Name(), peerPoll)
	case "clean stop":
		return fmt.Sprintf("%s; clock to the exit of the last of the %d units (pidfds, poll(2))", p.Describe().stop, peerUnits)
	case "SIGTERM → manager exited":
		return fmt.Sprintf("%s; clock to the manager's own exit (wait(2) of the child, or its pid gone)", p.Describe().stop)
	case "status":
		return fmt.Sprintf("%s with %d units running; clock from exec to exit, %d per round", p.Describe().status, peerUnits, peerStatusN)
	case "edit → restart":
		return fmt.Sprintf("%s; clock to the new process's line on a FIFO, %d per round", p.Describe().edit, peerEditN)
	}
	return fmt.Sprintf("kill(2) SIGKILL of %s (%s); clock to the exit of the last of the %d units (pidfds), given up after %v", p.Name(), p.Describe().owner, peerUnits, peerKilled)
}

// oneLineOf is err's text on one line, cut to its first 300 bytes: a
// crashed manager's error carries its whole output.
func oneLineOf(err error) string {
	t := strings.Join(strings.Fields(err.Error()), " ")
	if len(t) > 300 {
		t = t[:300] + "…"
	}
	return t
}
