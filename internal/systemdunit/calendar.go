package systemdunit

import (
	"fmt"
	"strings"
	"time"

	"github.com/hermes-units/hermes/units"
	"github.com/robfig/cron/v3"
)

// starBit is robfig/cron's mark of a field written "*" or "?" (bit 63 of
// the field's set). It matters for the day fields only: when both the day
// of month and the day of week are restricted, cron fires on either
// (OR); when one is "*", on both (AND).
const starBit = 1 << 63

// OnCalendar converts a unit's 5-field cron schedule into a systemd
// OnCalendar= expression that fires at exactly the same times, in the same
// time zone (a CRON_TZ=/TZ= prefix becomes the expression's time zone).
//
// It fails with an error wrapping ErrSchedule when the schedule does not
// parse, or when no single calendar expression is exact: cron fires when
// either a restricted day of month or a restricted day of week matches,
// while systemd requires both.
func OnCalendar(expr string) (string, error) {
	sched, err := units.ParseSchedule(expr)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrSchedule, expr, err)
	}
	s, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return "", fmt.Errorf("%w: %q: not a field schedule", ErrSchedule, expr)
	}
	dom, dow := s.Dom, s.Dow
	const allDom, allDow = 0xfffffffe, 0x7f // bits 1..31, bits 0..6
	if dom&starBit == 0 && dow&starBit == 0 {
		// Either day matches (OR). Exact only when one side already
		// matches every day.
		switch {
		case dom&allDom == allDom || dow&allDow == allDow:
			dom, dow = starBit|allDom, starBit|allDow
		default:
			return "", fmt.Errorf("%w: %q fires when the day of month OR the day of week matches, "+
				"and an OnCalendar= expression matches only both; split it into two units "+
				"(one restricting the day of month, one the day of week)", ErrSchedule, expr)
		}
	}
	var b strings.Builder
	if dow&allDow != allDow {
		b.WriteString(weekdays(dow))
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "*-%s-%s %s:%s:00",
		values(s.Month, 1, 12), values(dom, 1, 31), values(s.Hour, 0, 23), values(s.Minute, 0, 59))
	if s.Location != nil && s.Location != time.Local && s.Location.String() != "Local" {
		b.WriteString(" " + s.Location.String())
	}
	return b.String(), nil
}

// values writes the members of set within lo..hi as a systemd calendar
// component: "*" for all, else a list of values and "A..B" ranges, two
// digits each. The repetition form ("00/7") is never used: systemd 252
// skips its first value after a month rollover (hour 00/7 missed 00:05
// on the 1st), which a list does not.
func values(set uint64, lo, hi int) string {
	var vs []int
	for v := lo; v <= hi; v++ {
		if set&(1<<uint(v)) != 0 {
			vs = append(vs, v)
		}
	}
	if len(vs) == hi-lo+1 {
		return "*"
	}
	return list(vs, func(v int) string { return fmt.Sprintf("%02d", v) })
}

var dayNames = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

// weekdays writes a day-of-week set (bit 0 is Sunday) Monday first, as
// systemd orders them: "Mon..Fri", "Sat,Sun".
func weekdays(set uint64) string {
	var vs []int // 1 = Monday ... 7 = Sunday
	for d := 1; d <= 7; d++ {
		if set&(1<<uint(d%7)) != 0 {
			vs = append(vs, d)
		}
	}
	return list(vs, func(v int) string { return dayNames[v%7] })
}

// list joins sorted values, folding runs of three or more into "A..B".
func list(vs []int, name func(int) string) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, name(vs[i])+".."+name(vs[j]))
		case j == i+1:
			parts = append(parts, name(vs[i]), name(vs[j]))
		default:
			parts = append(parts, name(vs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
