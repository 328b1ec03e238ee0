package main

import (
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
