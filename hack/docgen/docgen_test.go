package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestChartValues(t *testing.T) {
	data := []byte(`# The file's header.
# More of it.

# The image.
image:
  # Its repository.
  repository: op
  tag: ""
list: [a, b]
# Empty maps are leaves.
labels: {}
count: 3
`)
	got, err := chartValues(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []value{
		{path: "image", doc: "The image."},
		{path: "image.repository", def: `"op"`, doc: "Its repository."},
		{path: "image.tag", def: `""`},
		{path: "list", def: "[a, b]"},
		{path: "labels", def: "{}", doc: "Empty maps are leaves."},
		{path: "count", def: "3"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("chartValues:\n got %+v\nwant %+v", got, want)
	}
	if _, err := chartValues([]byte("- a list\n")); err == nil {
		t.Error("a list at the top: no error")
	}
}

// The metrics are read from the registry the reconciler registers into,
// each with its labels in the order the code declares them.
func TestOperatorMetrics(t *testing.T) {
	ms, err := operatorMetrics()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metric{}
	for _, m := range ms {
		if !strings.HasPrefix(m.name, "shimkit_") || m.help == "" {
			t.Errorf("metric %+v: want a shimkit_ name and help", m)
		}
		byName[m.name] = m
	}
	nodes, ok := byName["shimkit_shim_nodes"]
	if !ok || nodes.kind != "gauge" || !slices.Equal(nodes.labels, []string{"shim", "state"}) {
		t.Errorf("shimkit_shim_nodes: %+v", nodes)
	}
	op := byName["shimkit_node_operation_duration_seconds"]
	if op.kind != "histogram" || !slices.Equal(op.labels, []string{"shim", "op", "result", "reason"}) || len(op.buckets) == 0 {
		t.Errorf("shimkit_node_operation_duration_seconds: %+v", op)
	}
}

// A collector that is no vector is described too, without labels.
func TestDescribePlain(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_up", Help: "Up."})
	m, err := describe(g)
	if err != nil || m.name != "x_up" || m.kind != "gauge" || len(m.labels) != 0 || m.help != "Up." {
		t.Errorf("describe(Gauge) = %+v, %v", m, err)
	}
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "X."}, []string{"b", "a", "c"})
	m, err = describe(v)
	if err != nil || !slices.Equal(m.labels, []string{"b", "a", "c"}) || m.kind != "counter" {
		t.Errorf("describe(CounterVec) = %+v, %v; want labels in declared order b, a, c", m, err)
	}
}

// -verify names the page that drifted and writes nothing.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	pages := map[string][]byte{"a.md": []byte("a\n"), "b.md": []byte("b\n")}
	if err := write(pages, dir, false); err != nil {
		t.Fatal(err)
	}
	if err := write(pages, dir, true); err != nil {
		t.Fatalf("verify after write: %v", err)
	}
	pages["b.md"] = []byte("b changed\n")
	err := write(pages, dir, true)
	if !errors.Is(err, errDrift) || !strings.Contains(err.Error(), "b.md") || strings.Contains(err.Error(), "a.md") {
		t.Errorf("verify of a changed page: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "b.md")); string(data) != "b\n" {
		t.Errorf("verify wrote b.md: %q", data)
	}
	if err := write(map[string][]byte{"new.md": []byte("x")}, dir, true); !errors.Is(err, errDrift) {
		t.Errorf("verify of a missing page: %v", err)
	}
}

// The flags page has every binary's help, with the --version flag.
func TestFlagsReference(t *testing.T) {
	page, err := flagsReference()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## shimkit-operator\n", "-installer-image", "-version", "## shimkit-operator migrate", "-apply", "## shimkit-installer", "-bundle-root"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("flags page lacks %q", want)
		}
	}
}

// The examples page has the packages' examples by their function names,
// with their code and checked output, and no internal package.
func TestExamplesReference(t *testing.T) {
	page, err := examplesReference(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n## fetch\n", "### ExampleHTTPFetcher\n", "fetch.NewHTTPFetcher(", "// Output:", "\n## installer/plan\n"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("examples page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "## internal/") {
		t.Error("examples page shows an internal package")
	}
}

// apiPageForTest is the API page generated now, when bin/crd-ref-docs is
// built (make tools), else the committed one (make verify-docs checks
// that it is current).
func apiPageForTest(t *testing.T) []byte {
	t.Helper()
	root := filepath.Join("..", "..")
	bin := filepath.Join(root, "bin", "crd-ref-docs")
	if _, err := os.Stat(bin); err == nil {
		page, err := apiReference(bin, filepath.Join(root, "operator", "api", "v1alpha1"),
			filepath.Join(root, "operator", "config", "crd", "bases", "containerd.x-k8s.io_shims.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	t.Logf("no %s: checking the committed page", bin)
	page, err := os.ReadFile(filepath.Join(root, "docs", "reference", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// The API page is for users: it opens with the Shim kind and its spec,
// keeps every table cell short and has none of crd-ref-docs's
// "Optional: {}" noise; the status comes last.
func TestAPIPage(t *testing.T) {
	page := string(apiPageForTest(t))
	if strings.Contains(page, "Optional: {}") || strings.Contains(page, `Optional: \{\}`) {
		t.Error(`the API page says "Optional: {}"`)
	}
	var headings []string
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "#") {
			headings = append(headings, line)
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, cell := range tableCells(line) {
			if len(cell) > 600 {
				t.Errorf("a table cell of %d characters: %.100s...", len(cell), cell)
			}
		}
	}
	if len(headings) < 4 || headings[0] != "# Shim API reference" || headings[1] != "## Shim" || headings[3] != "### ShimSpec" {
		t.Errorf("the API page does not open with Shim, then ShimSpec: %q", headings[:min(4, len(headings))])
	}
	if !strings.Contains(page, "`apiVersion: containerd.x-k8s.io/v1alpha1` · `kind: Shim` · cluster-scoped") {
		t.Error("the Shim section does not say its apiVersion, kind and scope")
	}
	status := slices.Index(headings, "## Status (written by the operator)")
	if status < 0 || headings[status+1] != "### ShimStatus" {
		t.Fatalf("no status section opening with ShimStatus: %q", headings)
	}
	// Every type of the spec comes before the status; the spec's own
	// fields name the first ones.
	for _, want := range []string{"### FetchStrategy", "### RuntimeClassSpec", "### RolloutStrategy", "### Disruption"} {
		if i := slices.Index(headings, want); i < 0 || i > status {
			t.Errorf("%s: not in the spec section", want)
		}
	}
	if slices.Index(headings, "### FetchStrategy") > slices.Index(headings, "### Disruption") {
		t.Error("spec.fetchStrategy's type comes after spec.rolloutStrategy.disruption's: not breadth-first")
	}
	for _, want := range []string{
		"| `fetchStrategy` | [FetchStrategy](#fetchstrategy) | yes |",
		"| `nodeSelector` | map of string | no |",
		"Default `true`.",
		"One of `Wait`, `Evict`.",
		"Path: `spec.rolloutStrategy.disruption`.",
		"??? note \"More on `",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the API page lacks %q", want)
		}
	}
	if err := checkAPIPage([]byte(page)); err != nil {
		t.Error(err)
	}
}

// checkAPIPage, which docgen runs before it writes the page, rejects each
// of the faults TestAPIPage looks for.
func TestCheckAPIPage(t *testing.T) {
	good := "# Shim API reference\n\n## Shim\n\n| a | b |\n| --- | --- |\n| `x` | y |\n\n## Spec\n\n### ShimSpec\n\n## Status (written by the operator)\n\n### ShimStatus\n"
	if err := checkAPIPage([]byte(good)); err != nil {
		t.Fatalf("a good page: %v", err)
	}
	for name, bad := range map[string]string{
		"Optional":    strings.Replace(good, "| y |", `| Optional: \{\} |`, 1),
		"long cell":   strings.Replace(good, "| y |", "| "+strings.Repeat("word ", 130)+"|", 1),
		"not Shim":    strings.Replace(good, "## Shim\n", "## AnonHTTPFetch\n", 1),
		"no status":   strings.Replace(good, "## Status (written by the operator)", "## Status", 1),
		"spec second": strings.Replace(good, "### ShimSpec", "### BundleFile", 1),
	} {
		if err := checkAPIPage([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// An escaped pipe does not split a cell.
	if cells := tableCells("| `a` | b \\| c | d |"); !slices.Equal(cells, []string{"`a`", "b \\| c", "d"}) {
		t.Errorf("tableCells: %q", cells)
	}
}

// A long field doc keeps its first sentence, not a period inside
// parentheses or an abbreviation.
func TestSplitDoc(t *testing.T) {
	doc := "first (as io.containerd. in it. really) sentence, e.g. this. " + strings.Repeat("more words ", 20)
	head, rest := splitDoc(doc, 100)
	if head != "first (as io.containerd. in it. really) sentence, e.g. this." || !strings.HasPrefix(rest, "more words") {
		t.Errorf("splitDoc: %q | %q", head, rest)
	}
	if head, rest := splitDoc("short. doc.", 100); head != "short. doc." || rest != "" {
		t.Errorf("a short doc was split: %q | %q", head, rest)
	}
	long := strings.Repeat("clause one ", 8) + "; " + strings.Repeat("clause two ", 8) + "."
	head, rest = splitDoc(long, 120)
	if !strings.HasSuffix(head, "; …") || !strings.HasPrefix(rest, "Clause two") {
		t.Errorf("a long first sentence: %q | %q", head, rest)
	}
}

// Limits read in a few words, a regex with a | as an HTML code span.
func TestConstraints(t *testing.T) {
	m := markers{
		"kubebuilder:default":                  {json.RawMessage(`{"Value":"rolling"}`)},
		"kubebuilder:validation:Enum":          {json.RawMessage(`["rolling","recreate"]`)},
		"kubebuilder:validation:MinLength":     {json.RawMessage(`1`)},
		"kubebuilder:validation:MaxLength":     {json.RawMessage(`63`)},
		"kubebuilder:validation:MaxItems":      {json.RawMessage(`1`)},
		"kubebuilder:validation:items:Pattern": {json.RawMessage(`"^a|b$"`)},
		"listType":                             {json.RawMessage(`"map"`)},
		"listMapKey":                           {json.RawMessage(`"name"`)},
		"optional":                             {json.RawMessage(`{}`)},
	}
	want := "Default `rolling`. One of `rolling`, `recreate`. 1 to 63 characters. At most 1 item. " +
		"Each matches <code>&#94;a&#124;b&#36;</code>. Unique by `name`."
	if got := constraints(m); got != want {
		t.Errorf("constraints:\n got %s\nwant %s", got, want)
	}
}

// Each metric has a section headed by its name, which the table links
// to: a name is never squeezed into a narrow cell and cut mid-word (the
// table's first column keeps it on one line, docs/assets/extra.css).
func TestMetricsReference(t *testing.T) {
	page, err := metricsReference()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| [`shimkit_shim_nodes`](#shimkit_shim_nodes) | gauge | `shim`, `state` |",
		"\n## shimkit_shim_nodes\n\nGauge, labelled `shim`, `state`.\n",
		"\n## shimkit_node_operation_duration_seconds\n",
		"Buckets, upper bounds in seconds: 0.5, 1,",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("metrics page lacks %q", want)
		}
	}
	css, err := os.ReadFile(filepath.Join("..", "..", "docs", "assets", "extra.css"))
	if err != nil || !strings.Contains(string(css), "td:first-child code") || !strings.Contains(string(css), "white-space: nowrap") {
		t.Errorf("docs/assets/extra.css does not keep first-column code on one line: %v", err)
	}
}
