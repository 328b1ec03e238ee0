package charttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/internal/yamlpath"
)

// optionsConfigMap is the ConfigMap the operator publishes its options in
// (always rendered, as in operator/config), not a dashboard's.
const optionsConfigMap = "shimkit-operator-options"

// TestMonitoringOff: with its defaults the chart renders no Service,
// ServiceMonitor, PrometheusRule or dashboard ConfigMap (it renders exactly
// operator/config: make verify-chart).
func TestMonitoringOff(t *testing.T) {
	for _, o := range render(t) {
		if o["kind"] == "ConfigMap" && str(o, "metadata", "name") == optionsConfigMap {
			continue
		}
		switch o["kind"] {
		case "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap":
			t.Errorf("%s %s rendered with the defaults", o["kind"], str(o, "metadata", "name"))
		}
	}
}

// TestMonitoringOn: with ci/all-values.yaml the ServiceMonitor selects the
// metrics Service, whose port is the operator container's metrics port and
// whose selector selects the operator's pods; the dashboard ConfigMap has
// dashboards/shimkit.json for Grafana's sidecar.
func TestMonitoringOn(t *testing.T) {
	objs := render(t, "-f", filepath.Join(chartDir(), "ci", "all-values.yaml"))
	svc, sm, d := one(t, objs, "Service"), one(t, objs, "ServiceMonitor"), one(t, objs, "Deployment")
	ns := str(d, "metadata", "namespace")

	if str(sm, "metadata", "namespace") != ns || str(svc, "metadata", "namespace") != ns {
		t.Errorf("namespaces: ServiceMonitor %s, Service %s, Deployment %s", str(sm, "metadata", "namespace"), str(svc, "metadata", "namespace"), ns)
	}
	if m := fmt.Sprint(yamlpath.Get(sm, "spec", "namespaceSelector", "matchNames")); m != "["+ns+"]" {
		t.Errorf("ServiceMonitor namespaceSelector %s, want [%s]", m, ns)
	}
	if !subset(yamlpath.Get(sm, "spec", "selector", "matchLabels"), yamlpath.Get(svc, "metadata", "labels")) {
		t.Errorf("ServiceMonitor selector %v does not select the Service's labels %v", yamlpath.Get(sm, "spec", "selector", "matchLabels"), yamlpath.Get(svc, "metadata", "labels"))
	}
	if !subset(yamlpath.Get(svc, "spec", "selector"), yamlpath.Get(d, "spec", "template", "metadata", "labels")) {
		t.Errorf("Service selector %v does not select the operator's pods %v", yamlpath.Get(svc, "spec", "selector"), yamlpath.Get(d, "spec", "template", "metadata", "labels"))
	}
	if l := str(sm, "metadata", "labels", "release"); l != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor label release %q, want metrics.serviceMonitor.labels'", l)
	}
	eps, _ := yamlpath.Get(sm, "spec", "endpoints").([]any)
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want 1", eps)
	}
	ep := eps[0]
	port := yamlpath.Get(svc, "spec", "ports", "name="+str(ep, "port"))
	if port == nil {
		t.Fatalf("ServiceMonitor endpoint port %q is no port of the Service %v", str(ep, "port"), yamlpath.Get(svc, "spec", "ports"))
	}
	if str(ep, "interval") != "15s" || str(ep, "scrapeTimeout") != "10s" || str(ep, "path") != "/metrics" {
		t.Errorf("ServiceMonitor endpoint %v", ep)
	}
	cport := yamlpath.Get(d, "spec", "template", "spec", "containers", "name=operator", "ports", "name="+str(port, "targetPort"))
	if cport == nil || fmt.Sprint(yamlpath.Get(cport, "containerPort")) != fmt.Sprint(yamlpath.Get(port, "port")) {
		t.Errorf("Service port %v: the operator container's port %v", port, cport)
	}

	var dashboards []object
	for _, o := range ofKind(objs, "ConfigMap") {
		if str(o, "metadata", "name") != optionsConfigMap {
			dashboards = append(dashboards, o)
		}
	}
	cm := one(t, dashboards, "ConfigMap")
	if l := str(cm, "metadata", "labels", "grafana_dashboard"); l != "1" {
		t.Errorf("dashboard ConfigMap label grafana_dashboard %q, want \"1\"", l)
	}
	if a := str(cm, "metadata", "annotations", "grafana_folder"); a != "shimkit" {
		t.Errorf("dashboard ConfigMap annotation grafana_folder %q", a)
	}
	want, err := os.ReadFile(filepath.Join(chartDir(), "dashboards", "shimkit.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := str(cm, "data", "shimkit.json")
	if got != string(want) && got+"\n" != string(want) {
		t.Errorf("the ConfigMap's shimkit.json is not dashboards/shimkit.json")
	}
	if !json.Valid([]byte(got)) {
		t.Error("the ConfigMap's shimkit.json is not JSON")
	}
}

// subset: every key of a is in b with the same value.
func subset(a, b any) bool {
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	if len(am) == 0 {
		return false
	}
	for k, v := range am {
		if bm[k] != v {
			return false
		}
	}
	return true
}
