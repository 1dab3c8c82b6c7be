package testkit

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Lines collects formatted lines from any goroutine: a log, whose Logf
// fits an Options.Logf, or the calls a fake received. The zero value is
// ready.
type Lines struct {
	mu    sync.Mutex
	lines []string // guarded by mu
}

// Logf adds a line, formatted as fmt.Sprintf does.
func (l *Lines) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// All returns the lines added so far, in order.
func (l *Lines) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// Matching returns the lines added so far that hold s.
func (l *Lines) Matching(s string) []string {
	var out []string
	for _, line := range l.All() {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}
