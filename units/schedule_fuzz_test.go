package units

import (
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// starBit is robfig/cron's mark of a field written "*" or "?".
const starBit = 1 << 63

// FuzzParseSchedule feeds arbitrary text to ParseSchedule (what a unit's
// schedule: goes through). It must never panic; whatever it accepts is a
// 5-field schedule whose next activation, from a fixed start, lies after
// the start, on a whole minute, and matches every field (day of month and
// day of week as cron reads them: either one when both are restricted). The
// corpus is in testdata/fuzz/FuzzParseSchedule; run longer with
// go test -run '^$' -fuzz FuzzParseSchedule -fuzztime 60s ./units
func FuzzParseSchedule(f *testing.F) {
	for _, seed := range []string{
		"*/15 * * * *", "0 3 * * 1-5", "30 2 1 * *", "0 0 29 2 *", "0 0 30 2 *",
		"5,10,15 */2 * 1,6 SUN", "0 12 * JAN-MAR MON-FRI", "* * * * *", "0 0 1 1 *",
		"@daily", "0 0 * * * *", "*/0 * * * *", "61 * * * *", "5-2 * * * *", "",
		"TZ=Europe/Paris 0 9 * * *", "CRON_TZ=UTC */5 * * * *", "0-59/7 0-23/5 1-31/3 1-12/4 0-6/2",
	} {
		f.Add(seed)
	}
	from := time.Date(2024, 2, 28, 23, 59, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		sched, err := ParseSchedule(expr)
		if err != nil {
			if sched != nil {
				t.Fatalf("ParseSchedule(%q) returned a schedule with error %v", expr, err)
			}
			return
		}
		if strings.HasPrefix(strings.TrimSpace(expr), "@") {
			t.Fatalf("ParseSchedule(%q) accepted a descriptor; only 5 fields are allowed", expr)
		}
		next := sched.Next(from)
		if next.IsZero() {
			return // a date that never comes (Feb 30): cron gives up
		}
		if !next.After(from) {
			t.Fatalf("%q: Next(%v) = %v, want a later time", expr, from, next)
		}
		if next.Second() != 0 || next.Nanosecond() != 0 {
			t.Fatalf("%q: Next = %v, want a whole minute", expr, next)
		}
		if again := sched.Next(next); !again.IsZero() && !again.After(next) {
			t.Fatalf("%q: Next(%v) = %v, want a later time", expr, next, again)
		}
		spec, ok := sched.(*cron.SpecSchedule)
		if !ok {
			t.Fatalf("%q: schedule %T, want a field schedule", expr, sched)
		}
		at := next.In(spec.Location)
		has := func(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }
		if !has(spec.Minute, at.Minute()) || !has(spec.Hour, at.Hour()) || !has(spec.Month, int(at.Month())) {
			t.Fatalf("%q: Next = %v, whose minute, hour or month is not in the schedule", expr, at)
		}
		dom, dow := has(spec.Dom, at.Day()), has(spec.Dow, int(at.Weekday()))
		day := dom && dow
		if spec.Dom&starBit == 0 && spec.Dow&starBit == 0 {
			day = dom || dow
		}
		if !day {
			t.Fatalf("%q: Next = %v, whose day is not in the schedule", expr, at)
		}
	})
}
