package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/rewrite")

// repoTable is the table of testdata/repo/BENCHMARKS.md.
func repoTable(t *testing.T) table {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "repo", benchmarksFile))
	if err != nil {
		t.Fatal(err)
	}
	tab, errs := parseTable(string(data))
	if len(errs) > 0 {
		t.Fatalf("testdata/repo/BENCHMARKS.md: %v", errs)
	}
	return tab
}

func TestParseTableOfTestdata(t *testing.T) {
	tab := repoTable(t)
	var got []figure
	for _, k := range tab.keys {
		got = append(got, tab.figures[k])
	}
	want := []figure{
		{key: "make-test-warm", value: "12 m 0 s", measured: "2026-12-01, def5678", command: "`make test`", line: 14},
		{key: "ci-cold", value: "29 m 53 s", measured: "2026-11-29, 95c01b9", command: "`bash .ci/run`", line: 15},
		{key: "resolve-http", value: "148 ms", measured: "2026-11-23, a748864", command: "`go test ./resolve -bench Resolve`", line: 16},
		{key: "largest-nodes", value: "15,000", measured: "2026-11-28, 8e22193", command: "`go test ./operator -bench Scale15000Nodes`", line: 17},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseTable:\n got %+v\nwant %+v", got, want)
	}
}

// bench is a BENCHMARKS.md whose figures table (its header at line 9)
// has the given rows, from line 11.
func bench(rows ...string) string {
	return "# B\n\n| what | figure |\n|---|---|\n| warm | 11 m 41 s; 148 ms; 15,000 nodes |\n\n" +
		"## Figures the documentation quotes\n\n| Key | Figure | Measured | Command |\n|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n\n## Next\n\n| `later` | 1 m 1 s | x | `y` |\n"
}

func TestParseTableProblems(t *testing.T) {
	ok := "| `make-test-warm` | 11 m 41 s | 2026-11-29, 3a7e66b | `make test` |"
	for _, c := range []struct {
		name, text string
		keys       []string
		want       []string
	}{
		{"two rows", bench(ok, "| nodes | 15,000 | 2026-11-28, 8e22193 | `go test ./operator` |"), []string{"make-test-warm", "nodes"}, nil},
		{"no section", "# B\n\n## Figures\n\n" + ok + "\n", nil,
			[]string{`BENCHMARKS.md: no section "## Figures the documentation quotes"`}},
		{"no table", "# B\n\n## Figures the documentation quotes\n\nNone yet.\n", nil,
			[]string{"BENCHMARKS.md:3: the section has no table | Key | Figure | Measured | Command |"}},
		{"no rows", bench(), nil, []string{"BENCHMARKS.md:7: the table has no rows"}},
		{"header", strings.Replace(bench(ok), "| Measured |", "| Date |", 1), nil,
			[]string{`BENCHMARKS.md:9: the table's header is "| Key | Figure | Date | Command |", not | Key | Figure | Measured | Command |`}},
		{"separator", strings.Replace(bench(ok), "|---|---|---|---|\n", "", 1), nil,
			[]string{"BENCHMARKS.md:10: the table's header is not followed by its separator row |---|---|---|---|"}},
		{"cells", bench("| `a` | 11 m 41 s | 2026-11-29 |"), nil,
			[]string{"BENCHMARKS.md:11: the row has 3 cells, not 4 (Key, Figure, Measured, Command)"}},
		{"key", bench("| Make_Test | 11 m 41 s | 2026-11-29 | `make test` |"), nil,
			[]string{`BENCHMARKS.md:11: key "Make_Test" is not lower-case words joined by '-'`}},
		{"markdown", bench("| `a` | **11 m 41 s** | 2026-11-29 | `make test` |"), nil,
			[]string{`BENCHMARKS.md:11: a: the figure "**11 m 41 s**" is not plain text (no Markdown, HTML or '|': pages quote it as it is)`}},
		{"measured", bench("| `a` | 11 m 41 s |  | `make test` |"), nil,
			[]string{"BENCHMARKS.md:11: a: no date and commit of the measurement"}},
		{"command", bench("| `a` | 11 m 41 s | 2026-11-29 | make test |"), nil,
			[]string{"BENCHMARKS.md:11: a: no command that measures it (a `code span`)"}},
		{"twice", bench(ok, ok), []string{"make-test-warm"},
			[]string{`BENCHMARKS.md:12: key "make-test-warm" again (first at line 11)`}},
		{"unmeasured", bench("| `a` | 36 m 58 s | 2026-11-20 | `make test` |"), []string{"a"},
			[]string{`BENCHMARKS.md:11: a: the figure "36 m 58 s" is in no measurement of BENCHMARKS.md outside this table`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab, errs := parseTable(c.text)
			if got := strings.Join(errStrings(errs), "\n"); got != strings.Join(c.want, "\n") {
				t.Errorf("problems:\n got %s\nwant %s", got, strings.Join(c.want, "\n"))
			}
			if !reflect.DeepEqual(tab.keys, c.keys) {
				t.Errorf("keys %q, want %q", tab.keys, c.keys)
			}
		})
	}
}

// The rewrite sets every span's figure to the table's and leaves the rest
// of the page as it was, byte for byte.
func TestRewriteGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "rewrite", "page.md"))
	if err != nil {
		t.Fatal(err)
	}
	fixed, _, stale, probs := checkPage("page.md", string(in), repoTable(t))
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	want := []string{
		`page.md:3: make-test-warm: the page says "11 m 8 s", BENCHMARKS.md says "12 m 0 s"`,
		`page.md:4: ci-cold: the page says "36 m 58 s", BENCHMARKS.md says "29 m 53 s"`,
	}
	if got := errStrings(stale); !reflect.DeepEqual(got, want) {
		t.Errorf("stale spans:\n got %q\nwant %q", got, want)
	}
	golden := filepath.Join("testdata", "rewrite", "page.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(fixed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantText, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if fixed != string(wantText) {
		t.Errorf("rewritten page:\n%s\nwant (%s):\n%s", fixed, golden, wantText)
	}
	again, _, stale, _ := checkPage("page.md", fixed, repoTable(t))
	if again != fixed || len(stale) > 0 {
		t.Errorf("a second rewrite changed the page again: %v", stale)
	}
}

const how = ` outside a marked span: quote it as <!-- figure:KEY -->%s<!-- /figure -->, KEY a row of BENCHMARKS.md's table (## Figures the documentation quotes)`

// unmarkedMsg is the problem of an unmarked figure v at p.md's line.
func unmarkedMsg(line, v, why string) string {
	return "p.md:" + line + `: "` + v + `" ` + why + strings.Replace(how, "%s", v, 1)
}

func TestVerifyPage(t *testing.T) {
	const dur = "is a measured duration"
	const mins = "is a measured duration next to make test, .ci/run, cold or warm"
	for _, c := range []struct{ name, page string }{
		{"agrees", "Warm <!-- figure:make-test-warm -->12 m 0 s<!-- /figure -->, in a <td><!-- figure:largest-nodes -->15,000<!-- /figure --></td>.\n"},
		{"wrapped", "Cold <!-- figure:ci-cold -->29\nm 53 s<!-- /figure -->.\n"},
		{"stale", "Warm <!-- figure:make-test-warm -->11 m 8 s<!-- /figure -->.\n"},
		{"unknown key", "x\nCold <!-- figure:make-test-cold -->36 m 58 s<!-- /figure -->.\n"},
		{"unmarked", "A cold run took 36 m 58 s, then\n11 m\n41 s warm.\n"},
		{"minutes near", "About 25 minutes, then `make test`.\n"},
		{"minutes far", "A bake of 30 minutes watches the first node of the rollout, and then the next one is changed.\n"},
		{"copy", "It took 148 ms; not 1148 ms nor 148 msec nor 0.148 ms.\n"},
		{"code block", "```sh\nmake test # 11 m 41 s\n<!-- figure:ci-cold -->29 m 53 s<!-- /figure -->\n```\n"},
		{"inline code", "Mark it so: `<!-- figure:KEY -->…<!-- /figure -->`, ``a `<!-- figure:x -->` in ``, and\n`` <!-- figure:ci-cold -->12 m 0 s<!-- /figure --> ``; after it <!-- figure:ci-cold -->29 m 53 s<!-- /figure -->.\n"},
		{"line start", "Cold\n<!-- figure:ci-cold -->29 m 53 s<!-- /figure --> and\n  <!-- /figure -->\n"},
		{"unclosed", "Cold <!-- figure:ci-cold -->29 m 53 s and <!-- figure:make-test-warm -->12 m 0 s<!-- /figure -->, <!-- figure:ci-cold -->x\n"},
		{"no key", "Cold <!-- figure -->29 m 53 s<!-- /figure --> <!-- figure: -->1<!-- /figure -->.\n"},
		{"blank line", "Cold <!-- figure:ci-cold -->29 m\n\n53 s<!-- /figure -->.\n"},
	} {
		want := map[string][]string{
			"stale":        {`p.md:1: make-test-warm: the page says "11 m 8 s", BENCHMARKS.md says "12 m 0 s"`},
			"unknown key":  {`p.md:2: unknown key "make-test-cold": no row of BENCHMARKS.md's table (## Figures the documentation quotes)`},
			"unmarked":     {unmarkedMsg("1", "36 m 58 s", dur), unmarkedMsg("2", "11 m 41 s", dur)},
			"minutes near": {unmarkedMsg("1", "25 minutes", mins)},
			"copy":         {unmarkedMsg("1", "148 ms", "is the figure resolve-http of BENCHMARKS.md")},
			"code block":   {unmarkedMsg("2", "11 m 41 s", dur), unmarkedMsg("3", "29 m 53 s", dur)},
			"inline code":  {unmarkedMsg("2", "12 m 0 s", dur)},
			"line start": {
				"p.md:2: a figure marker starts the line: MkDocs takes it for an HTML block and splits the paragraph (put a word before it)",
				"p.md:3: a figure marker starts the line: MkDocs takes it for an HTML block and splits the paragraph (put a word before it)",
				"p.md:3: <!-- /figure --> closes no span",
			},
			"unclosed": {
				`p.md:1: the span of "ci-cold" is not closed before the next marker (line 1)`,
				unmarkedMsg("1", "29 m 53 s", dur),
				`p.md:1: the span of "ci-cold" is never closed (<!-- /figure -->)`,
			},
			"no key": {
				"p.md:1: a figure marker without a key: <!-- figure:KEY -->",
				unmarkedMsg("1", "29 m 53 s", dur),
				"p.md:1: <!-- /figure --> closes no span",
				"p.md:1: a figure marker without a key: <!-- figure:KEY -->",
				"p.md:1: <!-- /figure --> closes no span",
			},
			"blank line": {
				`p.md:1: the span of "ci-cold" runs over a blank line`,
				unmarkedMsg("1", "29 m 53 s", dur),
			},
		}[c.name]
		t.Run(c.name, func(t *testing.T) {
			_, _, stale, probs := checkPage("p.md", c.page, repoTable(t))
			all := append(stale, probs...)
			sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })
			if got := errStrings(all); !reflect.DeepEqual(got, want) {
				t.Errorf("problems:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestPageFiles(t *testing.T) {
	got, err := pageFiles(filepath.Join("testdata", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "CHANGELOG.md", "docs/guides/x.md", "docs/index.md"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pageFiles: %q, want %q (not docs/reference nor docs/benchmarks/history.md)", got, want)
	}
}

// copyRepo copies testdata/repo into a temporary directory.
func copyRepo(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "repo")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func edit(t *testing.T, root, file, old, new string) {
	t.Helper()
	p := filepath.Join(root, file)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runIn runs the command on root and returns its exit code and output.
func runIn(root string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(append(args, "-root", root), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRun(t *testing.T) {
	const tail = "figures: 1 problems (make docs-gen rewrites the marked figures from the table; fix the rest by hand)\n"
	for _, c := range []struct {
		name, file, old, new string
		code                 int
		stderr               string
	}{
		// The excluded pages (docs/reference, docs/benchmarks/history.md)
		// have unmarked figures and an unknown key.
		{name: "agrees"},
		{"stale", "docs/index.md", ">148 ms<", ">0.15 s<", 1,
			`docs/index.md:3: resolve-http: the page says "0.15 s", BENCHMARKS.md says "148 ms"` + "\n" + tail},
		{"unquoted key", "docs/index.md", "<!-- figure:largest-nodes -->15,000<!-- /figure -->", "many", 1,
			`BENCHMARKS.md:17: key "largest-nodes" is quoted by no page: quote it or remove its row` + "\n" + tail},
		{"table", "BENCHMARKS.md", "| `ci-cold` | 29 m 53 s |", "| `ci-cold` | 28 m 59 s |", 1,
			`BENCHMARKS.md:15: ci-cold: the figure "28 m 59 s" is in no measurement of BENCHMARKS.md outside this table` + "\n" +
				`README.md:4: ci-cold: the page says "29 m 53 s", BENCHMARKS.md says "28 m 59 s"` + "\n" +
				`CHANGELOG.md:3: ci-cold: the page says "29 m 53 s", BENCHMARKS.md says "28 m 59 s"` + "\n" +
				strings.Replace(tail, "1 problems", "3 problems", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := copyRepo(t)
			if c.file != "" {
				edit(t, root, c.file, c.old, c.new)
			}
			code, stdout, stderr := runIn(root, "-verify")
			if code != c.code || stdout != "" || stderr != c.stderr {
				t.Errorf("figures -verify: exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stdout, stderr, c.code, c.stderr)
			}
		})
	}
}

// Without -verify the command rewrites a stale span, and -verify passes
// after it.
func TestRunRewrites(t *testing.T) {
	root := copyRepo(t)
	orig, err := os.ReadFile(filepath.Join(root, "docs", "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	edit(t, root, "docs/index.md", ">148 ms<", ">0.15 s<")
	code, stdout, stderr := runIn(root)
	wantOut := `figures: rewrote docs/index.md:3: resolve-http: the page says "0.15 s", BENCHMARKS.md says "148 ms"` + "\n"
	if code != 0 || stdout != wantOut || stderr != "" {
		t.Errorf("figures: exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, wantOut)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "docs", "index.md")); !bytes.Equal(got, orig) {
		t.Errorf("docs/index.md after the rewrite:\n%s\nwant:\n%s", got, orig)
	}
	if code, _, stderr := runIn(root, "-verify"); code != 0 {
		t.Errorf("figures -verify after the rewrite: exit %d: %s", code, stderr)
	}
	// An unmarked figure is not fixed by a rewrite: it fails, naming it.
	edit(t, root, "README.md", "and a cold", "and 36 m 58 s cold")
	code, _, stderr = runIn(root)
	if want := `README.md:3: "36 m 58 s" is a measured duration` + strings.Replace(how, "%s", "36 m 58 s", 1) + "\nfigures: 1 problems (fix them)\n"; code != 1 || stderr != want {
		t.Errorf("figures with an unmarked figure: exit %d, stderr:\n%s\nwant 1:\n%s", code, stderr, want)
	}
}

func errStrings[E error](errs []E) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
