package testkit

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// Plays runs play up to runs times, each a subtest of t named by its
// number (from 1) on a goroutine that holds one of slots while it runs,
// so that plays of several callers sharing slots overlap up to its
// capacity. It stops starting plays once t failed, or once until (if not
// zero) has passed, and returns when every play it started has ended,
// with how many of them failed.
func Plays(t *testing.T, runs int, slots chan struct{}, until time.Time, play func(t *testing.T)) (failed int) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i := range runs {
		slots <- struct{}{}
		if t.Failed() || (!until.IsZero() && time.Now().After(until)) {
			<-slots
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			t.Run(strconv.Itoa(i+1), func(t *testing.T) {
				defer func() {
					if t.Failed() {
						mu.Lock()
						failed++
						mu.Unlock()
					}
				}()
				play(t)
			})
		})
	}
	wg.Wait()
	return failed
}
