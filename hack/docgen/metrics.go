package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// metric is one metric as the registry describes it.
type metric struct {
	name, kind, help string
	labels           []string // in the order the code declares them
	buckets          []float64
}

// recorder is a registry that remembers what was registered into it.
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// operatorMetrics are the operator's metrics, read once per process (a
// second reconciler's controller of the same name is refused).
var operatorMetrics = sync.OnceValues(readOperatorMetrics)

// readOperatorMetrics sets the operator's reconciler up with a manager
// (which reaches for no API server until it starts) and returns every
// metric it registered into controller-runtime's registry, the one the
// manager's /metrics endpoint serves.
func readOperatorMetrics() ([]metric, error) {
	rec := &recorder{Registry: prometheus.NewRegistry()}
	saved := crmetrics.Registry
	crmetrics.Registry = rec
	defer func() { crmetrics.Registry = saved }()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:                 scheme,
		MapperProvider:         staticMapper(scheme),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  operator.CacheOptions("shimkit-system"),
	})
	if err != nil {
		return nil, err
	}
	r, err := operator.New(mgr.GetClient(), nil, operator.Options{InstallerImage: "shimkit-installer", Namespace: "shimkit-system", ServerVersion: "v1.34.0"})
	if err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	var ms []metric
	for _, c := range rec.collectors {
		m, err := describe(c)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, errors.New("the reconciler registered no metric")
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms, nil
}

// describe makes one series of a metric vector, labelled L0, L1, ... so
// that the labels' declared order can be read back, and reads the metric
// from a registry of its own (one collector, one metric family).
func describe(c prometheus.Collector) (metric, error) {
	var with func(...string) error
	switch v := c.(type) {
	case *prometheus.GaugeVec:
		with = func(l ...string) error { _, err := v.GetMetricWithLabelValues(l...); return err }
	case *prometheus.CounterVec:
		with = func(l ...string) error { _, err := v.GetMetricWithLabelValues(l...); return err }
	case *prometheus.HistogramVec:
		with = func(l ...string) error { _, err := v.GetMetricWithLabelValues(l...); return err }
	case *prometheus.SummaryVec:
		with = func(l ...string) error { _, err := v.GetMetricWithLabelValues(l...); return err }
	}
	// A collector that is no vector (a Gauge, a GaugeFunc, ...) has no
	// variable labels and collects its one series as it is.
	n := 0
	for with != nil && with(placeholders(n)...) != nil {
		if n++; n > 16 {
			return metric{}, fmt.Errorf("collector %T: no label count up to 16 fits", c)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return metric{}, err
	}
	fams, err := reg.Gather()
	if err != nil {
		return metric{}, err
	}
	if len(fams) != 1 || len(fams[0].GetMetric()) != 1 {
		return metric{}, fmt.Errorf("collector %T: want one metric with one series, got %d families", c, len(fams))
	}
	f := fams[0]
	m := metric{name: f.GetName(), help: f.GetHelp(), kind: strings.ToLower(f.GetType().String()), labels: make([]string, n)}
	for _, lp := range f.GetMetric()[0].GetLabel() {
		i, err := strconv.Atoi(strings.TrimPrefix(lp.GetValue(), "L"))
		if err != nil || i >= n {
			return metric{}, fmt.Errorf("%s: unexpected label %s=%s", m.name, lp.GetName(), lp.GetValue())
		}
		m.labels[i] = lp.GetName()
	}
	if f.GetType() == dto.MetricType_HISTOGRAM {
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			m.buckets = append(m.buckets, b.GetUpperBound())
		}
	}
	return m, nil
}

// clusterScoped are the kinds of the scheme that are not namespaced.
var clusterScoped = map[string]bool{"Shim": true, "Node": true, "RuntimeClass": true, "Namespace": true, "PersistentVolume": true}

// staticMapper maps the scheme's kinds without an API server (the manager
// asks one for the watches' scopes otherwise).
func staticMapper(scheme *runtime.Scheme) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	return func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
		m := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
		for gvk := range scheme.AllKnownTypes() {
			scope := meta.RESTScopeNamespace
			if clusterScoped[gvk.Kind] {
				scope = meta.RESTScopeRoot
			}
			m.Add(gvk, scope)
		}
		return m, nil
	}
}

func placeholders(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = "L" + strconv.Itoa(i)
	}
	return l
}

// metricsReference is the metrics page: a table of every metric, its
// type and labels (names link to their sections; extra.css keeps a name
// in a table's first column on one line), then a section per metric,
// headed by its name, with its help and a histogram's buckets.
func metricsReference() ([]byte, error) {
	ms, err := operatorMetrics()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Metrics reference\n\n")
	b.WriteString("Every metric shimkit's operator registers, read from the registry its reconciler registers into:\n")
	b.WriteString("the operator serves them on `--metrics-bind-address` (`:8080/metrics`) beside controller-runtime's own\n")
	b.WriteString("(`controller_runtime_reconcile_*`, `workqueue_*`, `rest_client_*`) and the Go runtime's (`go_*`, `process_*`).\n")
	b.WriteString("How to use them, the alerts and the dashboard: [Metrics and alerts](../guides/metrics.md).\n\n")
	b.WriteString("| Metric | Type | Labels |\n| --- | --- | --- |\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", m.name, m.name, m.kind, codeLabels(m.labels))
	}
	for _, m := range ms {
		fmt.Fprintf(&b, "\n## %s\n\n", m.name)
		if len(m.labels) > 0 {
			fmt.Fprintf(&b, "%s, labelled %s.\n\n", titleCase(m.kind), codeLabels(m.labels))
		} else {
			fmt.Fprintf(&b, "%s, without labels.\n\n", titleCase(m.kind))
		}
		fmt.Fprintf(&b, "%s\n", escapeText(strings.Join(strings.Fields(m.help), " ")))
		if len(m.buckets) > 0 {
			bounds := make([]string, len(m.buckets))
			for i, v := range m.buckets {
				bounds[i] = strconv.FormatFloat(v, 'g', -1, 64)
			}
			fmt.Fprintf(&b, "\nBuckets, upper bounds in seconds: %s and `+Inf`.\n", strings.Join(bounds, ", "))
		}
	}
	return b.Bytes(), nil
}

// codeLabels lists label names as code.
func codeLabels(labels []string) string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = "`" + l + "`"
	}
	return strings.Join(out, ", ")
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// escapeCell makes text safe in a Markdown table cell.
func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
