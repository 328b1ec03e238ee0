package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A problem is one finding, at a line of a file (line 0: the whole file).
type problem struct {
	file string
	line int
	msg  string
	at   int // the byte offset in the file, to order a line's problems
}

func (p problem) Error() string {
	if p.line == 0 {
		return p.file + ": " + p.msg
	}
	return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.msg)
}

// pageFiles lists the pages that quote figures, relative to root with
// forward slashes: README.md, CHANGELOG.md and docs/**/*.md, but not
// docs/reference (generated from the code) nor docs/benchmarks/history.md
// (every figure as it was when measured).
func pageFiles(root string) ([]string, error) {
	var out []string
	for _, f := range []string{"README.md", "CHANGELOG.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			out = append(out, f)
		}
	}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == "docs/reference":
			return filepath.SkipDir
		case d.IsDir() || rel == "docs/benchmarks/history.md" || filepath.Ext(p) != ".md":
			return nil
		}
		out = append(out, rel)
		return nil
	})
	return out, err
}

// A span is a marked figure: <!-- figure:KEY -->VALUE<!-- /figure -->.
type span struct {
	key                    string
	open, start, end, stop int // the opening marker, the value [start, end), after the closing marker
}

var (
	// markerRE finds an opening (<!-- figure:KEY -->) or closing
	// (<!-- /figure -->) marker.
	markerRE = regexp.MustCompile(`<!--\s*(/?)figure\b(?::\s*(\S*?))?\s*-->`)
	// durationRE is a headline figure's form, "11 m 41 s", a line break
	// allowed between its words.
	durationRE = regexp.MustCompile(`\b\d+\s+m\s+\d+\s+s\b`)
	// minutesRE is "25 minutes"; it is a quoted figure next to nearRE's words.
	minutesRE = regexp.MustCompile(`\b\d+(?:\.\d+)?\s+(?:min|minutes)\b`)
	nearRE    = regexp.MustCompile("make test|\\.ci/run|\\bcold\\b|\\bwarm\\b")
	// unitRE is a figure of a unit (0.19 s, 148 ms, 271.6 MiB), of which a
	// page may not quote an unmarked copy.
	unitRE = regexp.MustCompile(`\d\s*(?:µs|ms|s|m|min|minutes|h|B|KB|MB|GB|KiB|MiB|GiB|×|%)$`)
)

// near is how many bytes either side of "N minutes" nearRE's words count.
const near = 80

// scanSpans finds the page's marked spans; the problems are those of the
// markers themselves (unclosed, nested, where MkDocs would not keep them
// inline). A marker in code is text.
func scanSpans(file, text string) ([]span, []problem) {
	var spans []span
	var probs []problem
	bad := func(at int, format string, args ...any) {
		probs = append(probs, problem{file: file, line: lineOf(text, at), msg: fmt.Sprintf(format, args...), at: at})
	}
	code := codeRanges(text)
	var cur *span
	for _, m := range markerRE.FindAllStringSubmatchIndex(text, -1) {
		closing := m[3] > m[2]
		if inRanges(code, m[0]) {
			continue // code shows a marker as text: no span (a page on the markers shows one)
		}
		if lineStart(text, m[0]) {
			bad(m[0], "a figure marker starts the line: MkDocs takes it for an HTML block and splits the paragraph (put a word before it)")
		}
		if closing {
			if cur == nil {
				bad(m[0], "<!-- /figure --> closes no span")
				continue
			}
			cur.end, cur.stop = m[0], m[1]
			if strings.Contains(text[cur.start:cur.end], "\n\n") {
				bad(cur.open, "the span of %q runs over a blank line", cur.key)
			} else {
				spans = append(spans, *cur)
			}
			cur = nil
			continue
		}
		if cur != nil {
			bad(cur.open, "the span of %q is not closed before the next marker (line %d)", cur.key, lineOf(text, m[0]))
		}
		key := ""
		if m[4] >= 0 {
			key = text[m[4]:m[5]]
		}
		if key == "" {
			bad(m[0], "a figure marker without a key: <!-- figure:KEY -->")
			cur = nil
			continue
		}
		cur = &span{key: key, open: m[0], start: m[1]}
	}
	if cur != nil {
		bad(cur.open, "the span of %q is never closed (<!-- /figure -->)", cur.key)
	}
	return spans, probs
}

// checkPage checks one page's spans against the table and looks for
// figures outside them. It returns the page with every span's value set to
// the table's, its spans, and the spans that disagreed (fixed in the
// returned text) apart from the other problems.
func checkPage(file, text string, t table) (fixed string, spans []span, stale, probs []problem) {
	spans, probs = scanSpans(file, text)
	var b strings.Builder
	last := 0
	for _, s := range spans {
		value := text[s.start:s.end]
		f, ok := t.figures[s.key]
		if !ok {
			probs = append(probs, problem{file, lineOf(text, s.open), fmt.Sprintf("unknown key %q: no row of %s's table (## %s)", s.key, benchmarksFile, heading), s.open})
			continue
		}
		if normalize(value) == normalize(f.value) {
			continue
		}
		stale = append(stale, problem{file, lineOf(text, s.open), fmt.Sprintf("%s: the page says %q, %s says %q", s.key, normalize(value), benchmarksFile, f.value), s.open})
		b.WriteString(text[last:s.start])
		b.WriteString(f.value)
		last = s.end
	}
	b.WriteString(text[last:])
	return b.String(), spans, stale, append(probs, unmarked(file, text, spans, t)...)
}

// unmarked finds the figures a page quotes outside a span: a duration
// "N m N s"; "N minutes" near "make test", ".ci/run", "cold" or "warm";
// and a copy of a table's figure that has a unit.
func unmarked(file, text string, spans []span, t table) []problem {
	masked := []byte(text)
	for _, s := range spans {
		for i := s.open; i < s.stop; i++ {
			if masked[i] != '\n' {
				masked[i] = ' '
			}
		}
	}
	m := string(masked)
	var probs []problem
	taken := map[int]bool{}
	report := func(at, end int, why string) {
		if taken[at] {
			return
		}
		taken[at] = true
		v := normalize(m[at:end])
		probs = append(probs, problem{file, lineOf(text, at), fmt.Sprintf("%q %s outside a marked span: quote it as <!-- figure:KEY -->%s<!-- /figure -->, KEY a row of %s's table (## %s)", v, why, v, benchmarksFile, heading), at})
	}
	for _, r := range durationRE.FindAllStringIndex(m, -1) {
		report(r[0], r[1], "is a measured duration")
	}
	for _, r := range minutesRE.FindAllStringIndex(m, -1) {
		if nearRE.MatchString(m[max(0, r[0]-near):min(len(m), r[1]+near)]) {
			report(r[0], r[1], "is a measured duration next to make test, .ci/run, cold or warm")
		}
	}
	for _, k := range t.keys {
		re := t.copies[k]
		if re == nil {
			continue
		}
		for _, r := range re.FindAllStringSubmatchIndex(m, -1) {
			report(r[2], r[3], "is the figure "+k+" of "+benchmarksFile)
		}
	}
	return probs
}

// codeRanges returns the byte ranges of the page's code: its fenced code
// blocks and, outside them, its inline code spans.
func codeRanges(text string) [][2]int {
	var out [][2]int
	open, fence, at := -1, "", 0
	for _, l := range strings.SplitAfter(text, "\n") {
		t := strings.TrimLeft(l, " \t")
		switch {
		case open < 0 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			open, fence = at, t[:3]
		case open >= 0 && strings.HasPrefix(t, fence):
			out = append(out, [2]int{open, at + len(l)})
			open = -1
		}
		at += len(l)
	}
	if open >= 0 {
		out = append(out, [2]int{open, len(text)})
	}
	return append(out, inlineCode(text, out)...)
}

// inlineCode returns the byte ranges of the inline code spans outside the
// fenced blocks: a run of n backticks to the next run of exactly n, within
// a paragraph.
func inlineCode(text string, fences [][2]int) [][2]int {
	var out [][2]int
	run := func(i int) int {
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(text); {
		if text[i] != '`' || inRanges(fences, i) {
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(text) && !strings.HasPrefix(text[j:], "\n\n"); {
			if m := run(j); m == n {
				end = j + m
				break
			} else if m > 0 {
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			i += n
			continue
		}
		out = append(out, [2]int{i, end})
		i = end
	}
	return out
}

func inRanges(rs [][2]int, at int) bool {
	for _, r := range rs {
		if at >= r[0] && at < r[1] {
			return true
		}
	}
	return false
}

// lineStart tells whether only spaces or tabs stand before at on its line.
func lineStart(text string, at int) bool {
	i := strings.LastIndexByte(text[:at], '\n') + 1
	return strings.TrimLeft(text[i:at], " \t") == ""
}

func lineOf(text string, at int) int { return strings.Count(text[:at], "\n") + 1 }
