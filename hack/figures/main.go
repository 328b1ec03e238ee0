// Command figures keeps every measured figure the documentation quotes the
// figure of BENCHMARKS.md, its one source (a figure quoted by hand on two
// pages had drifted apart on each).
//
// BENCHMARKS.md's section "## Figures the documentation quotes" holds a
// table | Key | Figure | Measured | Command |: a key per figure, the figure
// as the pages quote it, the date and commit of its measurement and the
// command that measures it. Every figure of it is also in a measurement of
// the rest of BENCHMARKS.md. A page quotes a figure as a marked span,
//
//	`make test` warm takes <!-- figure:make-test-warm -->11 m 41 s<!-- /figure -->
//
// (HTML comments: GitHub and MkDocs show the figure alone; a marker may
// not start a line, where MkDocs would take it for an HTML block; in code,
// a fenced block or an inline code span, a marker is text). The pages
// are README.md, CHANGELOG.md and docs/**/*.md, but not docs/reference
// (generated from the code) nor docs/benchmarks/history.md (every figure
// as it was).
//
// Without -verify it writes every span's figure from the table (make
// docs-gen). With -verify it writes nothing and fails (make verify-docs),
// naming the file and line, when a span's figure is not the table's, a
// marker names a key the table has not, a key of the table is quoted by no
// page, or a page quotes a figure outside a span: a duration "N m N s"
// anywhere, "N min"/"N minutes" near "make test", ".ci/run", "cold" or
// "warm", or a copy of a table's figure with a unit (148 ms, 271.6 MiB).
// Both fail on the table's own problems and on those of the markers.
//
//	figures [-verify] [-root .]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("figures", flag.ContinueOnError)
	fl.SetOutput(stderr)
	verify := fl.Bool("verify", false, "write nothing; fail when a page disagrees with BENCHMARKS.md or quotes a figure unmarked")
	root := fl.String("root", ".", "the repository")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	probs, err := figures(*root, *verify, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "figures:", err)
		return 1
	}
	for _, p := range probs {
		fmt.Fprintln(stderr, p)
	}
	if len(probs) > 0 {
		fix := "fix them"
		if *verify {
			fix = "make docs-gen rewrites the marked figures from the table; fix the rest by hand"
		}
		fmt.Fprintf(stderr, "figures: %d problems (%s)\n", len(probs), fix)
		return 1
	}
	return 0
}

// figures checks (and, unless verify, rewrites) every page; it returns the
// problems left.
func figures(root string, verify bool, log io.Writer) ([]error, error) {
	data, err := os.ReadFile(filepath.Join(root, benchmarksFile))
	if err != nil {
		return nil, err
	}
	t, probs := parseTable(string(data))
	files, err := pageFiles(root)
	if err != nil {
		return nil, err
	}
	quoted := map[string]bool{}
	for _, f := range files {
		path := filepath.Join(root, filepath.FromSlash(f))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		fixed, spans, stale, other := checkPage(f, string(data), t)
		for _, s := range spans {
			quoted[s.key] = true
		}
		if verify {
			other = append(other, stale...)
		}
		sort.SliceStable(other, func(i, j int) bool { return other[i].at < other[j].at })
		for _, p := range other {
			probs = append(probs, p)
		}
		if verify {
			continue
		}
		if len(stale) > 0 {
			if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
				return nil, err
			}
			for _, p := range stale {
				fmt.Fprintf(log, "figures: rewrote %s\n", p)
			}
		}
	}
	for _, k := range t.keys {
		if !quoted[k] {
			probs = append(probs, problem{benchmarksFile, t.figures[k].line, fmt.Sprintf("key %q is quoted by no page: quote it or remove its row", k), 0})
		}
	}
	return probs, nil
}
