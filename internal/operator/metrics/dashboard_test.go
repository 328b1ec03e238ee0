package metrics

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// exportedMetrics returns the names of the series the operator's metrics
// export (a histogram's _bucket, _sum and _count), each with its label
// names: every metric of a fresh metrics, registered on a fresh registry,
// given a value, and gathered.
func exportedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m := New()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	m.Observe(&v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}}, v1alpha1.ShimStatus{SpecHash: "h"}, false)
	m.Observe(&v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}}, v1alpha1.ShimStatus{SpecHash: "h"}, true)
	m.NodeOperation("spin", "install", resultFailed, "RestartFailed", time.Second)
	m.RuntimeRestarted("spin", "containerd")
	m.DriftDetected("spin", "n1")
	m.GateTripped("spin", "WorkloadFailures")
	m.RolloutStep("spin", 0)
	m.RolloutPaused("spin", false)
	m.Conditions("spin", []metav1.Condition{{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse}})

	descs := make(chan *prometheus.Desc, 100)
	for _, c := range []prometheus.Collector{m.nodes, m.duration, m.nodeOpDuration, m.nodeFailures, m.restarts, m.drift, m.gateTrips, m.step, m.paused, m.condition} {
		c.Describe(descs)
	}
	close(descs)
	described := len(descs)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != described {
		t.Fatalf("gathered %d metrics of the %d described: give the new ones a value here", len(mfs), described)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			out[mf.GetName()+"_bucket"] = append(slices.Clone(labels), "le")
			out[mf.GetName()+"_sum"] = labels
			out[mf.GetName()+"_count"] = labels
			continue
		}
		out[mf.GetName()] = labels
	}
	return out
}

var (
	metricRef = regexp.MustCompile(`\bshimkit_[a-zA-Z0-9_]+`)
	// A selector's label matchers: {a="x",b=~"y"}.
	matcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
)

// checkExpr reports the shimkit_* metrics expr names that the operator does
// not export, and the labels of their selectors that those metrics lack.
func checkExpr(t *testing.T, where, expr string, exported map[string][]string) int {
	t.Helper()
	n := 0
	for _, loc := range metricRef.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		n++
		labels, ok := exported[name]
		if !ok {
			t.Errorf("%s: %s is no metric of the operator's (it exports %v)", where, name, slices.Sorted(maps.Keys(exported)))
			continue
		}
		rest := expr[loc[1]:]
		if !strings.HasPrefix(rest, "{") {
			continue
		}
		sel := rest[:strings.IndexByte(rest, '}')+1]
		for _, m := range matcher.FindAllStringSubmatch(sel, -1) {
			if m[1] != "__name__" && !slices.Contains(labels, m[1]) && !isTargetLabel(m[1]) {
				t.Errorf("%s: %s has no label %s (it has %v)", where, name, m[1], labels)
			}
		}
	}
	return n
}

// isTargetLabel: labels Prometheus adds to every series it scrapes.
func isTargetLabel(l string) bool {
	return slices.Contains([]string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}, l)
}

// TestDashboardMetrics: the chart's Grafana dashboard is JSON, each panel
// has a unique id and queries the dashboard's data source, and every
// shimkit_* metric of its queries (and variables) is one the operator
// exports, with the labels it selects on.
func TestDashboardMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "shimkit", "dashboards", "shimkit.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboards/shimkit.json: %v", err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard uid %q title %q, %d panels", dash.UID, dash.Title, len(dash.Panels))
	}
	ids := map[int]string{}
	refs := 0
	for _, p := range dash.Panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q have the id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q, %d queries", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if checkExpr(t, "panel "+p.Title, tg.Expr, exported) == 0 {
				t.Errorf("panel %q: query %q names no shimkit metric", p.Title, tg.Expr)
			}
			refs++
		}
	}
	for _, v := range dash.Templating.List {
		checkExpr(t, "variable "+v.Name, v.Definition, exported)
	}
	// Nothing else in the file names a metric the operator lacks.
	for _, name := range metricRef.FindAllString(string(data), -1) {
		if _, ok := exported[name]; !ok {
			t.Errorf("dashboards/shimkit.json names %s, no metric of the operator's", name)
		}
	}
	// The dashboard shows every metric the operator exports.
	for name := range exported {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !strings.Contains(string(data), base) {
			t.Errorf("no panel of the dashboard shows %s", base)
		}
	}
}

// TestAlertRuleMetrics: every shimkit_* metric the chart's alert rules
// (templates/_alerts.tpl) name is one the operator exports, with the labels
// they select on. hack/charttest runs promtool's unit tests on the rendered
// rules.
func TestAlertRuleMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "shimkit", "templates", "_alerts.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := checkExpr(t, "templates/_alerts.tpl", string(data), exported); n < 4 {
		t.Errorf("templates/_alerts.tpl names %d shimkit metrics, want one per alert at least", n)
	}
}
