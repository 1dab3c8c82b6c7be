package reconciler

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-units/hermes/units"
)

// TestRotationOffRunsGoroutine: log rotation is file work without a bound
// Run could afford (a large copy, a slow disk, and log.keep renames); it
// used to run on Run's goroutine, and a slow pass held every status and
// exit behind it. With a rotation stuck, status answers and an exit is
// handled; once it ends the timer is armed again, one pass at a time.
func TestRotationOffRunsGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		h := &harness{t: t, fs: &fakeSpawner{fail: map[string]error{}}, errc: make(chan error, 1),
			specs: []units.Spec{spec("web", func(s *units.Spec) { s.Log = units.Log{MaxSize: 1 << 20, Keep: 3} })}}
		r, err := New(Options{
			Role: Gateway, Spawner: h.fs, StateDir: t.TempDir(), Env: []string{"PATH=/bin"},
			Rand: func() float64 { return 0.5 },
			Load: func(context.Context) (Loaded, error) { return Loaded{Specs: h.specs}, nil },
			Rotate: func(string, int64, int) (bool, error) {
				calls.Add(1)
				<-release
				return true, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		h.r = r
		ctx, cancel := context.WithCancel(t.Context())
		h.cancel = cancel
		go func() { h.errc <- r.Run(ctx) }()
		t.Cleanup(func() { close(release); h.shutdown() })
		synctest.Wait()

		time.Sleep(RotateInterval + time.Millisecond)
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("rotations after %v: %d, want 1 (stuck)", RotateInterval, n)
		}
		answered := make(chan error, 1)
		go func() { _, err := r.Status(context.Background()); answered <- err }()
		synctest.Wait()
		select {
		case err := <-answered:
			if err != nil {
				t.Fatalf("status during a stuck rotation: %v", err)
			}
		default:
			t.Fatal("status does not answer while a rotation is stuck")
		}
		h.fs.last(t, "web").exit(errExit1)
		synctest.Wait()
		if u := h.unit("web"); u.State != "failed" {
			t.Errorf("exit during a stuck rotation: state %s, want failed", u.State)
		}
		// No second pass while the first is stuck.
		time.Sleep(3 * RotateInterval)
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Errorf("rotations while the first is stuck: %d, want 1", n)
		}
	})
}
