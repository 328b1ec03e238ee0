package main

import (
	"fmt"
	"regexp"
	"strings"
)

// benchmarksFile is the one source of the figures, and heading the title of
// its section that lists the figures the documentation quotes.
const (
	benchmarksFile = "BENCHMARKS.md"
	heading        = "Figures the documentation quotes"
)

// A figure is a row of the table: a key the pages name, the figure as the
// pages quote it, when and at which commit it was measured, and the command
// that measures it.
type figure struct {
	key, value, measured, command string
	line                          int // its row's line in BENCHMARKS.md
}

// A table is the section's table, its keys in the table's order.
type table struct {
	figures map[string]figure
	keys    []string
	// copies find on a page an unmarked copy of each figure of a unit
	// (unitRE), by key.
	copies map[string]*regexp.Regexp
}

var (
	keyRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// A figure is plain text: it is written into the pages as it is.
	plainRE     = regexp.MustCompile("^[^<>|`*_\\[\\]]+$")
	separatorRE = regexp.MustCompile(`^:?-+:?$`)
)

// columns are the table's header, in order.
var columns = []string{"key", "figure", "measured", "command"}

// parseTable reads the table of the section "## Figures the documentation
// quotes" of BENCHMARKS.md's text. Every figure must also be in a
// measurement of the rest of the file (the rows above, with their detail),
// so that the table only picks figures, never states new ones.
func parseTable(text string) (table, []error) {
	lines := strings.Split(text, "\n")
	start, end := sectionLines(lines)
	if start < 0 {
		return table{}, []error{problem{file: benchmarksFile, msg: fmt.Sprintf("no section %q", "## "+heading)}}
	}
	t := table{figures: map[string]figure{}, copies: map[string]*regexp.Regexp{}}
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, problem{file: benchmarksFile, line: i + 1, msg: fmt.Sprintf(format, args...)})
	}
	i := start
	for i < end && !strings.HasPrefix(strings.TrimSpace(lines[i]), "|") {
		i++
	}
	if i+1 >= end {
		bad(start-1, "the section has no table | Key | Figure | Measured | Command |")
		return t, errs
	}
	if h := cells(lines[i]); !sameColumns(h) {
		bad(i, "the table's header is %q, not | Key | Figure | Measured | Command |", strings.TrimSpace(lines[i]))
		return t, errs
	}
	if !isSeparator(cells(lines[i+1])) {
		bad(i+1, "the table's header is not followed by its separator row |---|---|---|---|")
		return t, errs
	}
	rest := strings.Join(append(append([]string{}, lines[:start-1]...), lines[end:]...), "\n")
	for i += 2; i < end && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		f, err := parseRow(lines[i], i+1)
		if err != "" {
			bad(i, "%s", err)
			continue
		}
		if prev, dup := t.figures[f.key]; dup {
			bad(i, "key %q again (first at line %d)", f.key, prev.line)
			continue
		}
		if !strings.Contains(normalize(rest), normalize(f.value)) {
			bad(i, "%s: the figure %q is in no measurement of %s outside this table", f.key, f.value, benchmarksFile)
		}
		t.figures[f.key] = f
		t.keys = append(t.keys, f.key)
		if unitRE.MatchString(f.value) {
			t.copies[f.key] = regexp.MustCompile(`(?:^|[^\w.,])(` + strings.Join(strings.Fields(regexp.QuoteMeta(f.value)), `\s+`) + `)(?:$|[^\w])`)
		}
	}
	if len(t.keys) == 0 && len(errs) == 0 {
		bad(start-1, "the table has no rows")
	}
	return t, errs
}

// sectionLines returns the lines of the section's body, [start, end), or
// -1 when there is no such section. It ends at the next heading of level 1
// or 2.
func sectionLines(lines []string) (start, end int) {
	start = -1
	for i, l := range lines {
		if start < 0 {
			if strings.TrimSpace(l) == "## "+heading {
				start = i + 1
			}
			continue
		}
		if strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "## ") {
			return start, i
		}
	}
	return start, len(lines)
}

// parseRow reads a row; the error is "" when it is well formed.
func parseRow(line string, n int) (figure, string) {
	c := cells(line)
	if len(c) != len(columns) {
		return figure{}, fmt.Sprintf("the row has %d cells, not %d (Key, Figure, Measured, Command)", len(c), len(columns))
	}
	f := figure{key: strings.Trim(c[0], "`"), value: c[1], measured: c[2], command: c[3], line: n}
	switch {
	case !keyRE.MatchString(f.key):
		return f, fmt.Sprintf("key %q is not lower-case words joined by '-'", c[0])
	case !plainRE.MatchString(f.value):
		return f, fmt.Sprintf("%s: the figure %q is not plain text (no Markdown, HTML or '|': pages quote it as it is)", f.key, f.value)
	case f.measured == "":
		return f, fmt.Sprintf("%s: no date and commit of the measurement", f.key)
	case !strings.Contains(f.command, "`"):
		return f, fmt.Sprintf("%s: no command that measures it (a `code span`)", f.key)
	}
	return f, ""
}

// cells splits a table row into its trimmed cells; an escaped \| stays in
// its cell.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '|' {
			cur.WriteString(`\|`)
			i++
			continue
		}
		if line[i] == '|' {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(out, strings.TrimSpace(cur.String()))
}

func sameColumns(h []string) bool {
	if len(h) != len(columns) {
		return false
	}
	for i, c := range columns {
		if strings.ToLower(h[i]) != c {
			return false
		}
	}
	return true
}

func isSeparator(c []string) bool {
	if len(c) != len(columns) {
		return false
	}
	for _, s := range c {
		if !separatorRE.MatchString(s) {
			return false
		}
	}
	return true
}

// normalize folds runs of white space (a line break included) into one space.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }
