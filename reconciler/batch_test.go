package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/hermes-units/hermes/supervisor"
	"github.com/hermes-units/hermes/units"
)

// batchSpawner is a fakeSpawner that also stops in batches (StopBatcher):
// it records each batch's units, says the batch is signalled, then makes
// each process exit and reports its stop done.
type batchSpawner struct {
	*fakeSpawner
	bmu     sync.Mutex
	batches [][]string // guarded by bmu
}

func (b *batchSpawner) StopAll(ctx context.Context, orders []supervisor.StopOrder, signalled func(), done func(i int, err error)) error {
	var names []string
	for _, o := range orders {
		names = append(names, o.Group.Unit)
	}
	b.bmu.Lock()
	b.batches = append(b.batches, names)
	b.bmu.Unlock()
	for _, o := range orders {
		b.fakeSpawner.stopQuietly(o.Group)
	}
	signalled()
	for i := range orders {
		done(i, nil)
	}
	return nil
}

// TestShutdownStopsLevelsInBatches: at hermesd's clean stop, every owned
// unit that nothing active depends on is handed to the spawner in one
// batch (StopAll signals them all before it waits for any), and each
// dependency level after it in a batch of its own, once the units above
// it are stopped: five independent units and the top of a chain a ← b ←
// c go together, then b, then a. Survivors are in no batch.
func TestShutdownStopsLevelsInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		specs := []units.Spec{
			spec("a"),
			spec("b", func(s *units.Spec) { s.Requires = []string{"a"} }),
			spec("c", func(s *units.Spec) { s.After = []string{"b"} }),
			spec("keep", func(s *units.Spec) { s.Ownership, s.Reason = units.PersistOnRelease, "cache" }),
		}
		for _, n := range []string{"x1", "x2", "x3", "x4", "x5"} {
			specs = append(specs, spec(n))
		}
		h := newHarness(t, specs...)
		bs := &batchSpawner{fakeSpawner: h.fs}
		h.run(New(fakeOptions(t, bs, h.load)))
		synctest.Wait()
		if err := h.shutdown(); err != nil {
			t.Fatalf("Run after shutdown: %v", err)
		}
		bs.bmu.Lock()
		defer bs.bmu.Unlock()
		want := [][]string{{"c", "x1", "x2", "x3", "x4", "x5"}, {"b"}, {"a"}}
		got := make([][]string, len(bs.batches))
		for i, b := range bs.batches {
			got[i] = slices.Sorted(slices.Values(b))
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("shutdown's batches: got %v, want %v", got, want)
		}
		if n := len(h.fs.stopOrder()); n != 0 {
			t.Errorf("Stop called %d times beside the batches, want 0", n)
		}
	})
}

// lateBatcher is a batchSpawner whose StopAll, once every stop is done,
// waits for its ctx to end and returns its error: the release of the
// groups that a clean stop of hermesd cuts short.
type lateBatcher struct{ *batchSpawner }

func (b lateBatcher) StopAll(ctx context.Context, orders []supervisor.StopOrder, signalled func(), done func(i int, err error)) error {
	_ = b.batchSpawner.StopAll(ctx, orders, signalled, done)
	<-ctx.Done()
	return fmt.Errorf("ledger: release: %w", ctx.Err())
}

// warnings is a slog handler that keeps the messages of WARN and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return true }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// TestCleanStopWarnsNothing: a clean stop of hermesd whose last batch's
// release is cut short by the stop itself logs no warning (it logged
// "units stopped; the release of their groups failed err=context
// canceled").
func TestCleanStopWarnsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, spec("web"))
		bs := lateBatcher{&batchSpawner{fakeSpawner: h.fs}}
		w := &warnings{}
		o := fakeOptions(t, bs, h.load)
		o.Logger = slog.New(w)
		h.run(New(o))
		synctest.Wait()
		if err := h.shutdown(); err != nil {
			t.Fatalf("Run after shutdown: %v", err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.msgs) > 0 {
			t.Errorf("a clean stop logged warnings %q, want none", w.msgs)
		}
	})
}

// heldLines is a slog handler that holds every record with message msg
// until release is closed.
type heldLines struct {
	msg     string
	release <-chan struct{}
}

func (h heldLines) Enabled(context.Context, slog.Level) bool { return true }
func (h heldLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		<-h.release
	}
	return nil
}
func (h heldLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h heldLines) WithGroup(string) slog.Handler      { return h }

// returnsBatcher is a batchSpawner that says when its StopAll returned.
type returnsBatcher struct {
	*batchSpawner
	returned chan struct{}
}

func (b returnsBatcher) StopAll(ctx context.Context, orders []supervisor.StopOrder, signalled func(), done func(i int, err error)) error {
	err := b.batchSpawner.StopAll(ctx, orders, signalled, done)
	close(b.returned)
	return err
}

// TestStopWaitsNotHeldByLines: what a batch's stops do once their
// signals are sent, their log lines and the end of their runs' contexts,
// does not hold the waits for the groups' ends: with the "stopping unit"
// lines held, every group of hermesd's clean stop is still waited for and
// its stop done; Run returns once the lines are written.
func TestStopWaitsNotHeldByLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, spec("web"), spec("db"))
		bs := returnsBatcher{&batchSpawner{fakeSpawner: h.fs}, make(chan struct{})}
		release := make(chan struct{})
		o := fakeOptions(t, bs, h.load)
		o.Logger = slog.New(heldLines{"stopping unit", release})
		h.run(New(o))
		synctest.Wait()
		stopped := make(chan error, 1)
		go func() { stopped <- h.shutdown() }()
		synctest.Wait()
		select {
		case <-bs.returned:
		default:
			t.Error("StopAll had not returned while the stops' log lines were held: the waits waited for them")
		}
		select {
		case err := <-stopped:
			t.Fatalf("Run returned (%v) before the stops' log lines were written", err)
		default:
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("Run after shutdown: %v", err)
		}
	})
}
