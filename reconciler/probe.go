package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/hermes-units/hermes/units"
)

// ErrNoLogReader reports a log readiness probe with no log follower wired.
var ErrNoLogReader = errors.New("log readiness probe: no log reader configured")

// probe waits until the unit is ready by rd's tcp, http or log rule. It
// returns nil when ready, ctx's error when the run ended first, or an error
// that makes the probe itself impossible (a bad regexp). The start timeout
// bounds it from outside.
func probe(ctx context.Context, rd units.Ready, logPath string, offset int64,
	lines func(context.Context, string, int64) (<-chan string, error)) error {
	switch {
	case rd.TCP != "":
		return poll(ctx, func(ctx context.Context) bool {
			c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", rd.TCP)
			if err != nil {
				return false
			}
			c.Close()
			return true
		})
	case rd.HTTP != "":
		client := &http.Client{Timeout: 2 * time.Second}
		return poll(ctx, func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, rd.HTTP, nil)
			if err != nil {
				return false
			}
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode >= 200 && resp.StatusCode < 300
		})
	case rd.Log != "":
		re, err := regexp.Compile(rd.Log)
		if err != nil {
			return fmt.Errorf("log readiness regexp: %w", err)
		}
		if lines == nil {
			return ErrNoLogReader
		}
		ctx, cancel := context.WithCancel(ctx) // ends the follower once matched
		defer cancel()
		ch, err := lines(ctx, logPath, offset)
		if err != nil {
			return fmt.Errorf("follow %s: %w", logPath, err)
		}
		for l := range ch {
			if re.MatchString(l) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("log %s ended before a line matched %q", logPath, rd.Log)
	}
	return nil
}

// poll calls ok every probeInterval until it reports true or ctx ends.
func poll(ctx context.Context, ok func(context.Context) bool) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if ok(ctx) {
			return nil
		}
		t.Reset(probeInterval)
	}
}
