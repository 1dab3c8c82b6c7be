package reconciler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-units/hermes/units"
)

// BenchmarkEdit times one edit of one unit file among n, from the save to
// the new process's spawn, through the real loader over a real directory
// (with its cache, told the name changed as hermesd's watcher tells it:
// Options.LoadChanges) and the fake spawner: what an edit costs hermesd's
// engine at each size, the part that should not grow with n. Profile it
// with -cpuprofile; the start and the stop of the n units are outside the
// timer. cpu-ns/op is the process's CPU time per edit.
func BenchmarkEdit(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchEdit(b, n) })
	}
}

func benchEdit(b *testing.B, n int) {
	dir := b.TempDir()
	write := func(i, gen int) {
		p := filepath.Join(dir, fmt.Sprintf("u%05d.yaml", i))
		tmp := filepath.Join(dir, ".edit.tmp")
		if err := os.WriteFile(tmp, fmt.Appendf(nil, "command: [/bin/sleep, infinity]\nenv: {GEN: %q}\n", strconv.Itoa(gen)), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		write(i, 0)
	}
	time.Sleep(2100 * time.Millisecond) // past the cache's trust window: the files are read once
	fs := &fakeSpawner{fail: map[string]error{}}
	cache := &units.Cache{}
	changes := make(chan struct{}, 1)
	r, err := New(Options{Spawner: fs, StateDir: b.TempDir(), Env: []string{"PATH=/bin"}, Rand: func() float64 { return 0.5 },
		Load:    LoadDir(&units.Loader{Insecure: true, Cache: cache}, dir),
		Changes: changes,
		LoadChanges: func(ctx context.Context) (Loaded, error) {
			return LoadDir(&units.Loader{Insecure: true, Cache: cache, Changes: &units.Changes{Names: []string{"u00000.yaml"}}}, dir)(ctx)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		b.StopTimer() // the stop of the n units is outside the timer too
		cancel()
		<-done
	}()
	spawned := func() int {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return len(fs.spawns)
	}
	for spawned() < n {
		time.Sleep(time.Millisecond)
	}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		want := spawned() + 1
		write(0, i+1)
		changes <- struct{}{}
		for spawned() < want {
			time.Sleep(50 * time.Microsecond)
		}
	}
	// The process's CPU time per edit, every goroutine's (the reload, the
	// passes, the collector): less at the mercy of a loaded machine than
	// the wall-clock time.
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process used so far (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
