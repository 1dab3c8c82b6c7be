package importer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// errCalendar reports an OnCalendar= expression with no exact 5-field cron
// equivalent.
var errCalendar = errors.New("no exact 5-field cron equivalent")

// calendarShorthands are systemd.time(7)'s named expressions.
var calendarShorthands = map[string]string{
	"minutely":     "*-*-* *:*:00",
	"hourly":       "*-*-* *:00:00",
	"daily":        "*-*-* 00:00:00",
	"weekly":       "Mon *-*-* 00:00:00",
	"monthly":      "*-*-01 00:00:00",
	"yearly":       "*-01-01 00:00:00",
	"annually":     "*-01-01 00:00:00",
	"quarterly":    "*-01,04,07,10-01 00:00:00",
	"semiannually": "*-01,07-01 00:00:00",
}

var weekdayNum = map[string]int{
	"mon": 1, "monday": 1, "tue": 2, "tuesday": 2, "wed": 3, "wednesday": 3,
	"thu": 4, "thursday": 4, "fri": 5, "friday": 5, "sat": 6, "saturday": 6,
	"sun": 7, "sunday": 7,
}

// cronSchedule converts a systemd OnCalendar= expression into a 5-field
// cron schedule that fires at the same times: [weekdays] [date] [time]
// [time zone], each component "*", a list of values, "A..B" ranges and
// "A/N" repetitions. It fails, wrapping errCalendar, on what cron cannot
// say: seconds other than 0, a year, the last days of a month ("~"), and a
// weekday together with a day of month (systemd requires both; cron fires
// on either).
func cronSchedule(expr string) (string, error) {
	e := strings.TrimSpace(expr)
	if s, ok := calendarShorthands[strings.ToLower(e)]; ok {
		e = s
	}
	fields := strings.Fields(e)
	dow := "*"
	if len(fields) > 0 && fields[0] != "" && isWeekdays(fields[0]) {
		d, err := weekdays(fields[0])
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v", errCalendar, expr, err)
		}
		dow, fields = d, fields[1:]
	}
	date, clock, tz := "*-*-*", "00:00:00", ""
	for _, f := range fields {
		switch {
		case strings.Contains(f, ":"):
			clock = f
		case strings.ContainsAny(f[:1], "0123456789*"):
			date = f
		default:
			if _, err := time.LoadLocation(f); err != nil {
				return "", fmt.Errorf("%w: %q: %q is not a date, a time or a time zone", errCalendar, expr, f)
			}
			tz = f
		}
	}
	dom, month, err := dateFields(date)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", errCalendar, expr, err)
	}
	minute, hour, err := clockFields(clock)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", errCalendar, expr, err)
	}
	if dom != "*" && dow != "*" {
		return "", fmt.Errorf("%w: %q restricts both the weekday and the day of month, which systemd requires together and cron takes as either", errCalendar, expr)
	}
	out := strings.Join([]string{minute, hour, dom, month, dow}, " ")
	if tz != "" {
		out = "CRON_TZ=" + tz + " " + out
	}
	return out, nil
}

func isWeekdays(f string) bool {
	first := strings.FieldsFunc(strings.ToLower(f), func(r rune) bool { return r == ',' || r == '.' })
	if len(first) == 0 {
		return false
	}
	_, ok := weekdayNum[first[0]]
	return ok
}

// weekdays converts "Mon..Fri,Sun" to cron's "1-5,0".
func weekdays(f string) (string, error) {
	var set [8]bool
	for _, part := range strings.Split(strings.ToLower(f), ",") {
		lo, hi, isRange := strings.Cut(part, "..")
		a, ok := weekdayNum[lo]
		if !ok {
			return "", fmt.Errorf("weekday %q", lo)
		}
		b := a
		if isRange {
			if b, ok = weekdayNum[hi]; !ok {
				return "", fmt.Errorf("weekday %q", hi)
			}
		}
		for d := a; ; d = d%7 + 1 {
			set[d%7] = true
			if d == b {
				break
			}
		}
	}
	var vs []int
	for d := range 7 {
		if set[d] {
			vs = append(vs, d)
		}
	}
	if len(vs) == 7 {
		return "*", nil
	}
	return cronList(vs), nil
}

// cronList writes values as cron items, runs of three or more as ranges.
func cronList(vs []int) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d-%d", vs[i], vs[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, strconv.Itoa(vs[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// dateFields reads "[YEAR-]MONTH-DAY" into cron's day-of-month and month.
func dateFields(date string) (dom, month string, err error) {
	parts := strings.Split(date, "-")
	switch len(parts) {
	case 3:
		if parts[0] != "*" {
			return "", "", fmt.Errorf("a year (%s) cannot be said in cron", parts[0])
		}
		parts = parts[1:]
	case 2:
	default:
		return "", "", fmt.Errorf("date %q", date)
	}
	if strings.Contains(parts[1], "~") {
		return "", "", fmt.Errorf("the last days of a month (~) cannot be said in cron")
	}
	if month, err = component(parts[0], 1, 12); err != nil {
		return "", "", fmt.Errorf("month: %v", err)
	}
	if dom, err = component(parts[1], 1, 31); err != nil {
		return "", "", fmt.Errorf("day: %v", err)
	}
	return dom, month, nil
}

// clockFields reads "HOUR:MINUTE[:SECOND]"; the second must be 0.
func clockFields(clock string) (minute, hour string, err error) {
	parts := strings.Split(clock, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return "", "", fmt.Errorf("time %q", clock)
	}
	if len(parts) == 3 {
		if sec, err := strconv.ParseFloat(parts[2], 64); err != nil || sec != 0 {
			return "", "", fmt.Errorf("seconds %q: cron fires on the minute", parts[2])
		}
	}
	if hour, err = component(parts[0], 0, 23); err != nil {
		return "", "", fmt.Errorf("hour: %v", err)
	}
	if minute, err = component(parts[1], 0, 59); err != nil {
		return "", "", fmt.Errorf("minute: %v", err)
	}
	return minute, hour, nil
}

// component converts one calendar component ("*", "1,15", "1..5",
// "0/15", "*/2") to a cron field within lo..hi.
func component(c string, lo, hi int) (string, error) {
	if c == "*" {
		return "*", nil
	}
	var out []string
	for _, item := range strings.Split(c, ",") {
		base, step, hasStep := strings.Cut(item, "/")
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n <= 0 {
				return "", fmt.Errorf("repetition %q", item)
			}
			start := lo
			if base != "*" {
				v, err := num(base, lo, hi)
				if err != nil {
					return "", err
				}
				start = v
			}
			out = append(out, fmt.Sprintf("%d-%d/%d", start, hi, n))
			continue
		}
		a, b, isRange := strings.Cut(item, "..")
		x, err := num(a, lo, hi)
		if err != nil {
			return "", err
		}
		if !isRange {
			out = append(out, strconv.Itoa(x))
			continue
		}
		y, err := num(b, lo, hi)
		if err != nil || y < x {
			return "", fmt.Errorf("range %q", item)
		}
		out = append(out, fmt.Sprintf("%d-%d", x, y))
	}
	return strings.Join(out, ","), nil
}

func num(s string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
	}
	return v, nil
}
