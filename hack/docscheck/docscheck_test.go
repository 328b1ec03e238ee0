package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
)

// repoRoot is the repository's root.
func repoRoot() string { return testutil.RepoRoot() }

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A link to a missing page or a missing anchor is found; links that leave
// the site, assets and good anchors are not.
func TestCheckLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "index.html", `<html><body><h1 id="home">Home</h1>
<a href="guides/a/">a</a> <a href="guides/a/#ok">ok</a> <a href="guides/a/#gone">gone</a>
<a href="missing/">missing</a> <a href="https://example.com/#x">out</a> <a href="assets/pic.svg">pic</a>
<a href="#home">self</a> <a href="#nowhere">self gone</a></body></html>`)
	write(t, dir, "guides/a/index.html", `<html><body><h2 id="ok">OK<a href="#ok">¶</a></h2><a href="../../">up</a></body></html>`)
	write(t, dir, "assets/pic.svg", `<svg/>`)
	s, err := loadSite(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.checkLinks() {
		got = append(got, e.Error())
	}
	want := []string{
		`index.html: link "guides/a/#gone": guides/a/index.html has no anchor #gone`,
		`index.html: link "missing/": no page missing/index.html`,
		`index.html: link "#nowhere": index.html has no anchor #nowhere`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("checkLinks:\n got %q\nwant %q", got, want)
	}
	if h := s.pages["guides/a/index.html"].headings; !slices.Equal(h, []string{"OK"}) {
		t.Errorf("headings %q, want [OK] (the permalink's ¶ dropped)", h)
	}
}

func TestSitePage(t *testing.T) {
	for md, want := range map[string]string{
		"index.md":            "index.html",
		"concepts.md":         "concepts/index.html",
		"guides/bundles.md":   "guides/bundles/index.html",
		"benchmarks/index.md": "benchmarks/index.html",
	} {
		if got := sitePage(md); got != want {
			t.Errorf("sitePage(%s) = %s, want %s", md, got, want)
		}
	}
}

// A misspelt field of a whole Shim in the docs is found; snippets of a
// spec alone are not Shims.
func TestShimDocs(t *testing.T) {
	md := "```yaml\napiVersion: containerd.x-k8s.io/v1alpha1\nkind: Shim\nmetadata: {name: a}\nspec:\n  fetchStrategy: {type: image, image: {reference: r}}\n  runtimeClas: {name: a, handler: a}\n```\n" +
		"```yaml\nspec:\n  rolloutStrategy: {}\n```\n"
	docs := shimDocs(md)
	if len(docs) != 1 {
		t.Fatalf("shimDocs: %d documents, want 1", len(docs))
	}
	dir := t.TempDir()
	write(t, dir, "README.md", md)
	errs := checkShims(dir)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "runtimeClas") {
		t.Errorf("checkShims: %v, want the unknown field runtimeClas", errs)
	}
}

// The repository's own docs: the README fits, every page is in the nav,
// every reason has a row, every whole Shim decodes. (The site's links and
// the README's former sections are checked on the built site: make docs.)
func TestRepositoryDocs(t *testing.T) {
	root := repoRoot()
	for name, errs := range map[string][]error{
		"README":  checkREADME(root, nil),
		"nav":     checkNav(root),
		"reasons": checkReasons(root),
		"shims":   checkShims(root),
		"paths":   checkMachinePaths(root),
		"pages":   checkPages(root),
	} {
		for _, err := range errs {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A reason without a row in the troubleshooting table is named.
func TestCheckReasonsMissingRow(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "docs/reference/reasons.md", "| Reason | Final | Meaning |\n| --- | --- | --- |\n| `Conflict` | yes | x |\n| `BrandNew` | no | y |\n| `RolledOut` | z |\n")
	write(t, dir, "docs/guides/operating.md", "# Operating\n\n"+whatToDo+"\n\n| Reason | Where | What to do |\n|---|---|---|\n| `Conflict` | node | remove it |\n")
	errs := checkReasons(dir)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "BrandNew") {
		t.Errorf("checkReasons: %v, want BrandNew alone", errs)
	}
}

// A command with a machine's directory is named, file and line.
func TestCheckMachinePaths(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "BENCHMARKS.md", "| a | b | `git clone REPO warm` |\n| c | d | `cd /tmp/warm14 && make test` |\n")
	write(t, dir, "docs/guides/x.md", "# X\n\nRun `go test ./...` from /work/main.\n")
	errs := checkMachinePaths(dir)
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "BENCHMARKS.md:2") || !strings.Contains(errs[1].Error(), "docs/guides/x.md:3") {
		t.Errorf("checkMachinePaths: %v, want BENCHMARKS.md:2 and docs/guides/x.md:3", errs)
	}
}

// A guide without sections and a long table cell are named; a fenced
// block's lines are not judged.
func TestCheckPage(t *testing.T) {
	long := strings.Repeat("word ", 400)
	cell := "| a | " + strings.Repeat("x", 700) + " |"
	for _, tc := range []struct {
		name, text string
		guide      bool
		want       []string
	}{
		{"flat guide", "# G\n\n" + long, true, []string{"a guide of 402 words with 0 sections"}},
		{"guide with sections", "# G\n\n## A\n\n" + long + "\n\n## B\n", true, nil},
		{"short guide", "# G\n\nshort", true, nil},
		{"long cell", "# P\n\n" + cell + "\n", false, []string{"p.md:3: a table cell of 702 characters"}},
		{"fenced", "# P\n\n```\n" + cell + "\n```\n", false, nil},
	} {
		errs := checkPage("p.md", tc.text, tc.guide)
		if len(errs) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, errs, tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s: %v, want %q", tc.name, errs[i], w)
			}
		}
	}
}
