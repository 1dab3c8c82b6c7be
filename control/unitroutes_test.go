package control

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
)

// enablerBackend is a fakeBackend that is also an Enabler.
type enablerBackend struct{ *fakeBackend }

func (b enablerBackend) Disable(_ context.Context, unit string) error {
	b.calls.Logf("disable %s", unit)
	return b.err
}

func (b enablerBackend) Enable(_ context.Context, unit string, start bool) error {
	b.calls.Logf("enable %s start=%v", unit, start)
	return b.err
}

// maskerBackend is a fakeBackend that is also a Masker.
type maskerBackend struct{ *fakeBackend }

func (b maskerBackend) Mask(_ context.Context, unit string, now bool) error {
	b.calls.Logf("mask %s now=%v", unit, now)
	return b.err
}

func (b maskerBackend) Unmask(_ context.Context, unit string) error {
	b.calls.Logf("unmask %s", unit)
	return b.err
}

// resetterBackend is a fakeBackend that is also a FailureResetter.
type resetterBackend struct{ *fakeBackend }

func (b resetterBackend) ResetFailed(_ context.Context, unit string) error {
	b.calls.Logf("reset-failed %s", unit)
	return b.err
}

// signallerBackend is a fakeBackend that is also a Signaller.
type signallerBackend struct{ *fakeBackend }

func (b signallerBackend) Kill(_ context.Context, unit string, sig syscall.Signal, whom Whom) error {
	b.calls.Logf("kill %s %d %s", unit, sig, whom)
	return b.err
}

func (b signallerBackend) ReloadUnit(_ context.Context, unit string) error {
	b.calls.Logf("reload %s", unit)
	return b.err
}

// unitCall is one call of a Client method that acts on a unit.
type unitCall struct {
	name string
	do   func(ctx context.Context, c *Client, unit string) error
}

// TestUnitRoutes: each Client method of the optional unit routes reaches
// the Backend's method with the unit and its flags (Enable's start,
// Mask's now, Kill's signal and whom); the Backend's sentinels come back
// across the socket, a call with no unit name is ErrBadRequest, and a
// Backend without the interface answers CodeNoRoute.
func TestUnitRoutes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend func(*fakeBackend) Backend
		calls   []unitCall
		want    []string
	}{
		{"Enabler", func(b *fakeBackend) Backend { return enablerBackend{b} }, []unitCall{
			{"Disable", func(ctx context.Context, c *Client, unit string) error { return c.Disable(ctx, unit) }},
			{"Enable start", func(ctx context.Context, c *Client, unit string) error { return c.Enable(ctx, unit, true) }},
			{"Enable", func(ctx context.Context, c *Client, unit string) error { return c.Enable(ctx, unit, false) }},
		}, []string{"disable web", "enable web start=true", "enable web start=false"}},
		{"Masker", func(b *fakeBackend) Backend { return maskerBackend{b} }, []unitCall{
			{"Mask", func(ctx context.Context, c *Client, unit string) error { return c.Mask(ctx, unit, false) }},
			{"Mask now", func(ctx context.Context, c *Client, unit string) error { return c.Mask(ctx, unit, true) }},
			{"Unmask", func(ctx context.Context, c *Client, unit string) error { return c.Unmask(ctx, unit) }},
		}, []string{"mask web now=false", "mask web now=true", "unmask web"}},
		{"FailureResetter", func(b *fakeBackend) Backend { return resetterBackend{b} }, []unitCall{
			{"ResetFailed", func(ctx context.Context, c *Client, unit string) error { return c.ResetFailed(ctx, unit) }},
		}, []string{"reset-failed web"}},
		{"Signaller", func(b *fakeBackend) Backend { return signallerBackend{b} }, []unitCall{
			{"Kill", func(ctx context.Context, c *Client, unit string) error {
				return c.Kill(ctx, unit, syscall.SIGHUP, WhomMain)
			}},
			{"ReloadUnit", func(ctx context.Context, c *Client, unit string) error { return c.ReloadUnit(ctx, unit) }},
		}, []string{"kill web 1 main", "reload web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			s := serve(t, NewServer(tc.backend(b), Options{}))
			old := serve(t, NewServer(&fakeBackend{}, Options{}))
			ctx := t.Context()
			for _, c := range tc.calls {
				if err := c.do(ctx, s.client, "web"); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
			if got := b.calls.All(); !slices.Equal(got, tc.want) {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
			for _, c := range tc.calls {
				for _, sentinel := range []error{ErrUnknownUnit, ErrConflict} {
					b.err = sentinel
					if err := c.do(ctx, s.client, "web"); !errors.Is(err, sentinel) {
						t.Errorf("%s: got %v, want %v across the socket", c.name, err, sentinel)
					}
				}
				if err := c.do(ctx, s.client, ""); !errors.Is(err, ErrBadRequest) {
					t.Errorf("%s of no name: got %v, want ErrBadRequest", c.name, err)
				}
				var ce *Error
				if err := c.do(ctx, old.client, "web"); !errors.As(err, &ce) || ce.Code != CodeNoRoute {
					t.Errorf("%s on a daemon without the route: got %v, want code %s", c.name, err, CodeNoRoute)
				}
			}
		})
	}
}
