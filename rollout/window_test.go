package rollout

import (
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestWindowsOpen(t *testing.T) {
	utc := func(s string) time.Time {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	win := func(days []string, start, end, zone string) Window {
		w, err := ParseWindow(days, start, end, zone)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	weekdays := []string{"Mon", "Tue", "Wed", "Thu", "Fri"}
	for _, tc := range []struct {
		name    string
		windows Windows
		now     string
		open    bool
		next    string
	}{
		{"no windows: always open", nil, "2026-11-25T03:00:00Z", true, ""},
		{"inside office hours", Windows{win(weekdays, "09:00", "17:00", "")}, "2026-11-23T10:00:00Z", true, ""},
		{"at the start: open", Windows{win(weekdays, "09:00", "17:00", "")}, "2026-11-23T09:00:00Z", true, ""},
		{"at the end: closed", Windows{win(weekdays, "09:00", "17:00", "")}, "2026-11-23T17:00:00Z", false, "2026-11-24T09:00:00Z"},
		{"Friday evening: Monday", Windows{win(weekdays, "09:00", "17:00", "")}, "2026-11-27T18:00:00Z", false, "2026-11-30T09:00:00Z"},
		{"across midnight, after it", Windows{win(nil, "22:00", "04:00", "")}, "2026-11-25T02:00:00Z", true, ""},
		{"across midnight, before it", Windows{win(nil, "22:00", "04:00", "")}, "2026-11-25T05:00:00Z", false, "2026-11-25T22:00:00Z"},
		{"across midnight belongs to its start day", Windows{win([]string{"Sat"}, "22:00", "04:00", "")}, "2026-11-29T03:00:00Z", true, ""},
		{"across midnight, not the day after", Windows{win([]string{"Sat"}, "22:00", "04:00", "")}, "2026-11-29T22:30:00Z", false, "2026-12-05T22:00:00Z"},
		{"the earliest of several", Windows{win([]string{"Wed"}, "20:00", "21:00", ""), win([]string{"Wed"}, "12:00", "13:00", "")}, "2026-11-25T08:00:00Z", false, "2026-11-25T12:00:00Z"},
		{"a zone's weekday, not UTC's", Windows{win([]string{"Mon"}, "09:00", "10:00", "Asia/Tokyo")}, "2026-11-29T23:30:00Z", false, "2026-11-30T00:00:00Z"},
		{"a zone's weekday, open", Windows{win([]string{"Mon"}, "09:00", "10:00", "Asia/Tokyo")}, "2026-11-30T00:30:00Z", true, ""},
		// New York leaves EST (UTC-5) for EDT (UTC-4) on 2026-03-08: 09:00
		// local is 14:00Z before, 13:00Z after.
		{"before spring forward", Windows{win(nil, "09:00", "10:00", "America/New_York")}, "2026-03-06T12:00:00Z", false, "2026-03-06T14:00:00Z"},
		{"after spring forward", Windows{win(nil, "09:00", "10:00", "America/New_York")}, "2026-03-09T12:00:00Z", false, "2026-03-09T13:00:00Z"},
		{"after spring forward, open an hour earlier in UTC", Windows{win(nil, "09:00", "10:00", "America/New_York")}, "2026-03-09T13:30:00Z", true, ""},
		// Berlin falls back from CEST to CET on 2026-10-25 at 03:00: a
		// 01:00–05:00 window lasts five hours that night.
		{"fall back: the longer night still open at 03:30Z", Windows{win(nil, "01:00", "05:00", "Europe/Berlin")}, "2026-10-25T03:30:00Z", true, ""},
		{"fall back: closed at 04:00Z", Windows{win(nil, "01:00", "05:00", "Europe/Berlin")}, "2026-10-25T04:00:00Z", false, "2026-10-26T00:00:00Z"},
		// Spring forward on 2026-03-29 at 02:00 CET: a 01:00–03:00 window
		// lasts one hour.
		{"spring forward: the short night", Windows{win(nil, "01:00", "03:00", "Europe/Berlin")}, "2026-03-29T00:30:00Z", true, ""},
		{"spring forward: closed at 01:00Z", Windows{win(nil, "01:00", "03:00", "Europe/Berlin")}, "2026-03-29T01:00:00Z", false, "2026-03-29T23:00:00Z"},
		// A start in the hour the clocks skip (02:00–03:00 on 2026-03-29)
		// opens an hour later on the wall clock, the instant 02:30 CET
		// would have been (03:30 CEST, 01:30Z); the window still ends at
		// 04:00 CEST (02:00Z).
		{"spring forward: a start in the skipped hour", Windows{win(nil, "02:30", "04:00", "Europe/Berlin")}, "2026-03-29T00:30:00Z", false, "2026-03-29T01:30:00Z"},
		{"spring forward: open after the skipped start", Windows{win(nil, "02:30", "04:00", "Europe/Berlin")}, "2026-03-29T01:45:00Z", true, ""},
		{"spring forward: closed at the end", Windows{win(nil, "02:30", "04:00", "Europe/Berlin")}, "2026-03-29T02:00:00Z", false, "2026-03-30T00:30:00Z"},
		// A start in the hour that happens twice (02:00–03:00 on
		// 2026-10-25) opens once, at its second occurrence (02:30 CET,
		// 01:30Z), not at the first (02:30 CEST, 00:30Z).
		{"fall back: a start in the repeated hour, first pass", Windows{win(nil, "02:30", "04:00", "Europe/Berlin")}, "2026-10-25T00:40:00Z", false, "2026-10-25T01:30:00Z"},
		{"fall back: a start in the repeated hour, second pass", Windows{win(nil, "02:30", "04:00", "Europe/Berlin")}, "2026-10-25T01:30:00Z", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, next := tc.windows.Open(utc(tc.now))
			if open != tc.open {
				t.Errorf("open = %v, want %v", open, tc.open)
			}
			var want time.Time
			if tc.next != "" {
				want = utc(tc.next)
			}
			if !next.Equal(want) {
				t.Errorf("next = %s, want %s", next.UTC().Format(time.RFC3339), tc.next)
			}
		})
	}
}

func TestParseWindowErrors(t *testing.T) {
	for _, tc := range []struct {
		days             []string
		start, end, zone string
		want             string
	}{
		{[]string{"Monday"}, "09:00", "10:00", "", `day "Monday"`},
		{nil, "9:00", "10:00", "", `start: "9:00"`},
		{nil, "09:00", "24:00", "", `end: "24:00"`},
		{nil, "09:00", "09:00", "", "must not be empty"},
		{nil, "09:00", "10:00", "Mars/Olympus", `timeZone "Mars/Olympus"`},
	} {
		_, err := ParseWindow(tc.days, tc.start, tc.end, tc.zone)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseWindow(%v, %s, %s, %s) = %v, want an error naming %s", tc.days, tc.start, tc.end, tc.zone, err, tc.want)
		}
	}
	if w, err := ParseWindow([]string{"Sun"}, "00:00", "23:59", "Europe/Berlin"); err != nil || w.Location != mustZone(t, "Europe/Berlin") && w.Location.String() != "Europe/Berlin" {
		t.Errorf("ParseWindow: %v %v", w, err)
	}
}
