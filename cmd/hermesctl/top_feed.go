package main

// What feeds the view besides the event stream: CPU time from /proc, and
// the selected unit's log.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/logfile"
	"github.com/hermes-units/hermes/proc"
)

// cpuSampler turns the CPU time of each unit's process group into a
// percentage of one CPU since the previous sample.
type cpuSampler struct {
	mu   sync.Mutex
	last map[int]cpuSample // by pgid
}

type cpuSample struct {
	ticks uint64
	at    time.Time
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux ABI Go supports.
const clockTicks = 100

// sample reads the CPU time of the groups of us (package proc, as status
// reads RSS) and returns pgid → CPU % since the last sample; a group seen
// for the first time has none yet.
func (c *cpuSampler) sample(us []control.Unit, now time.Time) map[int]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]float64{}
	seen := map[int]bool{}
	for _, u := range us {
		if u.PGID <= 0 || u.State == control.StateReleased || seen[u.PGID] {
			continue
		}
		seen[u.PGID] = true
		pids, err := proc.GroupMembers(u.PGID)
		if err != nil {
			continue
		}
		var ticks uint64
		for _, pid := range pids {
			if st, err := proc.ReadStat(pid); err == nil && st.PGID == u.PGID {
				ticks += st.CPU
			}
		}
		if prev, ok := c.last[u.PGID]; ok && now.After(prev.at) && ticks >= prev.ticks {
			out[u.PGID] = float64(ticks-prev.ticks) / clockTicks / now.Sub(prev.at).Seconds() * 100
		}
		c.last[u.PGID] = cpuSample{ticks, now}
	}
	for pg := range c.last {
		if !seen[pg] {
			delete(c.last, pg)
		}
	}
	return out
}

// logFollower follows the log file of one unit at a time and sends its
// lines to the view: the last ones, then each appended.
type logFollower struct {
	send func(tea.Msg)
	want chan string // the unit to follow next; the latest wins
}

// follow asks for unit's log; it never blocks.
func (f *logFollower) follow(unit string) {
	for {
		select {
		case f.want <- unit:
			return
		default:
		}
		select {
		case <-f.want: // drop a request not taken yet
		default:
		}
	}
}

// run follows until ctx ends; each new unit cancels the previous tail.
func (f *logFollower) run(ctx context.Context, c *control.Client) {
	var wg sync.WaitGroup
	stop := func() {}
	defer func() { stop(); wg.Wait() }()
	for {
		var unit string
		select {
		case <-ctx.Done():
			return
		case unit = <-f.want:
		}
		stop()
		wg.Wait()
		if unit == "" {
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		stop = cancel
		wg.Go(func() {
			path, err := c.LogPath(tctx, unit)
			if err != nil {
				f.send(logLineMsg{unit, "(no log: " + err.Error() + ")"})
				return
			}
			w := &lineWriter{emit: func(l string) { f.send(logLineMsg{unit, l}) }}
			if err := logfile.Tail(tctx, path, logLines, true, w); err != nil && tctx.Err() == nil {
				f.send(logLineMsg{unit, "(log: " + err.Error() + ")"})
			}
		})
	}
}

// lineWriter splits what is written into lines; control characters of a
// unit's output are shown inert.
type lineWriter struct {
	emit func(string)
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := slices.Index(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(inert(strings.ReplaceAll(strings.TrimRight(string(w.buf[:i]), "\r"), "\t", "    ")))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}
