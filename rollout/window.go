package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Window is a weekly maintenance window: it opens at Start on each of
// Days (every day when empty) in Location, and closes at End the same day,
// or the next day when End is not after Start. Start and End are wall
// clock times: a window follows its zone's daylight-saving changes (a
// start that does not exist on the day of a spring-forward opens when the
// clock reaches the next existing time).
type Window struct {
	Days       []time.Weekday
	Start, End time.Duration // since midnight
	Location   *time.Location
}

// dayNames are the day names of the API (MaintenanceWindow.days).
var dayNames = map[string]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// ParseWindow reads a window as the API writes it: day names ("Mon"),
// "HH:MM" times and an IANA zone ("" is UTC). The error names the value.
func ParseWindow(days []string, start, end, zone string) (Window, error) {
	w := Window{Location: time.UTC}
	for _, d := range days {
		wd, ok := dayNames[d]
		if !ok {
			return Window{}, fmt.Errorf("day %q: want Mon, Tue, Wed, Thu, Fri, Sat or Sun", d)
		}
		w.Days = append(w.Days, wd)
	}
	var err error
	if w.Start, err = clock(start); err != nil {
		return Window{}, fmt.Errorf("start: %w", err)
	}
	if w.End, err = clock(end); err != nil {
		return Window{}, fmt.Errorf("end: %w", err)
	}
	if w.Start == w.End {
		return Window{}, fmt.Errorf("start %s and end %s: a window must not be empty", start, end)
	}
	if zone != "" {
		if w.Location, err = time.LoadLocation(zone); err != nil {
			return Window{}, fmt.Errorf("timeZone %q: %w", zone, err)
		}
	}
	return w, nil
}

// clock parses "HH:MM".
func clock(s string) (time.Duration, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || len(h) != 2 || len(m) != 2 || err1 != nil || err2 != nil || hh > 23 || mm > 59 || hh < 0 || mm < 0 {
		return 0, fmt.Errorf("%q: want HH:MM (00:00 to 23:59)", s)
	}
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute, nil
}

// opening is one occurrence of a window.
type opening struct{ from, to time.Time }

// on returns the window's occurrence that starts on the calendar day of
// day (in its zone), if it opens that day.
func (w Window) on(day time.Time) (opening, bool) {
	y, m, d := day.Date()
	if len(w.Days) > 0 && !slices.Contains(w.Days, day.Weekday()) {
		return opening{}, false
	}
	at := func(dd int, off time.Duration) time.Time {
		return time.Date(y, m, dd, int(off/time.Hour), int(off%time.Hour/time.Minute), 0, 0, w.Location)
	}
	o := opening{from: at(d, w.Start), to: at(d, w.End)}
	if w.End <= w.Start {
		o.to = at(d+1, w.End)
	}
	return o, true
}

// Windows are a Shim's maintenance windows; none means always open.
type Windows []Window

// Open reports whether now is inside a window, and when the next one
// opens if not (the zero time when there are no windows, or now is
// inside one).
func (ws Windows) Open(now time.Time) (bool, time.Time) {
	if len(ws) == 0 {
		return true, time.Time{}
	}
	var next time.Time
	for _, w := range ws {
		local := now.In(w.Location)
		// Yesterday's window may still be open; a week and a day ahead
		// covers every weekly window's next opening.
		for i := -1; i <= 8; i++ {
			o, ok := w.on(local.AddDate(0, 0, i))
			if !ok || !o.to.After(now) {
				continue
			}
			if !o.from.After(now) {
				return true, time.Time{}
			}
			if next.IsZero() || o.from.Before(next) {
				next = o.from
			}
			break
		}
	}
	return false, next
}
