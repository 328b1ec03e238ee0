package charttest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool's unit test file (promtool test rules).
type (
	testFile struct {
		RuleFiles          []string    `json:"rule_files"`
		EvaluationInterval string      `json:"evaluation_interval"`
		Tests              []testGroup `json:"tests"`
	}
	testGroup struct {
		Name           string      `json:"name"`
		Interval       string      `json:"interval"`
		InputSeries    []series    `json:"input_series"`
		AlertRuleTests []alertTest `json:"alert_rule_test"`
	}
	series struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	alertTest struct {
		EvalTime  string     `json:"eval_time"`
		Alertname string     `json:"alertname"`
		ExpAlerts []expAlert `json:"exp_alerts"`
	}
	expAlert struct {
		ExpLabels      map[string]string `json:"exp_labels"`
		ExpAnnotations map[string]string `json:"exp_annotations"`
	}
)

var templateVar = regexp.MustCompile(`\{\{ \$(labels\.(\w+)|value) \}\}`)

// firing is the alert r fires with labels (besides the rule's own) and
// value: its labels, and its annotations expanded as Prometheus does.
func firing(r rule, labels map[string]string, value string) expAlert {
	l := maps.Clone(r.Labels)
	maps.Copy(l, labels)
	a := map[string]string{}
	for k, v := range r.Annotations {
		a[k] = templateVar.ReplaceAllStringFunc(v, func(m string) string {
			sm := templateVar.FindStringSubmatch(m)
			if sm[1] == "value" {
				return value
			}
			return labels[sm[2]]
		})
	}
	return expAlert{ExpLabels: l, ExpAnnotations: a}
}

func at(evalTime string, r rule, alerts ...expAlert) alertTest {
	if alerts == nil {
		alerts = []expAlert{} // none fires
	}
	return alertTest{EvalTime: evalTime, Alertname: r.Alert, ExpAlerts: alerts}
}

// alertTests are the promtool unit tests of the rules rendered with the
// chart's default bounds (degraded.for 10m, rolloutStalled.for 1h,
// driftRepeating 2 in 6h, workloadGateTripped.window 1h): each alert fires
// when it should and only then.
func alertTests(t *testing.T, groups []ruleGroup) []testGroup {
	degraded := ruleNamed(t, groups, "ShimkitShimDegraded")
	stalled := ruleNamed(t, groups, "ShimkitRolloutStalled")
	drift := ruleNamed(t, groups, "ShimkitDriftRepeating")
	gate := ruleNamed(t, groups, "ShimkitWorkloadGateTripped")
	shim := func(name string) map[string]string { return map[string]string{"shim": name} }
	return []testGroup{{
		Name:     "ShimkitShimDegraded: Degraded True for 10m",
		Interval: "1m",
		InputSeries: []series{
			// spin: Degraded from 5m to 35m, then the series goes.
			{`shimkit_shim_condition{shim="spin",type="Degraded",status="True",pod="a"}`, "0x4 1x30"},
			{`shimkit_shim_condition{shim="spin",type="Degraded",status="False",pod="a"}`, "1x4 0x30"},
			// kata: never Degraded; Ready False says nothing.
			{`shimkit_shim_condition{shim="kata",type="Degraded",status="True",pod="a"}`, "0x60"},
			{`shimkit_shim_condition{shim="kata",type="Degraded",status="False",pod="a"}`, "1x60"},
			{`shimkit_shim_condition{shim="kata",type="Ready",status="False",pod="a"}`, "1x60"},
			// gvisor: Degraded for 5m only.
			{`shimkit_shim_condition{shim="gvisor",type="Degraded",status="True",pod="a"}`, "0x9 1x4 0x40"},
		},
		AlertRuleTests: []alertTest{
			at("3m", degraded),
			at("14m", degraded), // spin pending since 5m
			at("16m", degraded, firing(degraded, shim("spin"), "1")),
			at("34m", degraded, firing(degraded, shim("spin"), "1")),
			at("45m", degraded), // spin's series went
		},
	}, {
		Name:     "ShimkitRolloutStalled: no node updated for 1h",
		Interval: "5m",
		InputSeries: []series{
			// stuck: 2 of 5 nodes updated, from the start.
			{`shimkit_shim_nodes{shim="stuck",state="matching"}`, "5x50"},
			{`shimkit_shim_nodes{shim="stuck",state="updated"}`, "2x50"},
			{`shimkit_shim_nodes{shim="stuck",state="in_progress"}`, "0x50"},
			{`shimkit_rollout_paused{shim="stuck"}`, "0x50"},
			// moving: a node updated every 5m (a large fleet).
			{`shimkit_shim_nodes{shim="moving",state="matching"}`, "100x50"},
			{`shimkit_shim_nodes{shim="moving",state="updated"}`, "0+1x50"},
			{`shimkit_shim_nodes{shim="moving",state="in_progress"}`, "1x50"},
			// paused: as stuck, but paused.
			{`shimkit_shim_nodes{shim="paused",state="matching"}`, "5x50"},
			{`shimkit_shim_nodes{shim="paused",state="updated"}`, "2x50"},
			{`shimkit_shim_nodes{shim="paused",state="in_progress"}`, "0x50"},
			{`shimkit_rollout_paused{shim="paused"}`, "1x50"},
			// done: every node updated.
			{`shimkit_shim_nodes{shim="done",state="matching"}`, "5x50"},
			{`shimkit_shim_nodes{shim="done",state="updated"}`, "5x50"},
			{`shimkit_shim_nodes{shim="done",state="in_progress"}`, "0x50"},
			// hung: every node updated, an installer Job running for ever.
			{`shimkit_shim_nodes{shim="hung",state="matching"}`, "3x50"},
			{`shimkit_shim_nodes{shim="hung",state="updated"}`, "3x50"},
			{`shimkit_shim_nodes{shim="hung",state="in_progress"}`, "1x50"},
			// fresh: created at 100m, stuck at 0 of 5.
			{`shimkit_shim_nodes{shim="fresh",state="matching"}`, "_x20 5x30"},
			{`shimkit_shim_nodes{shim="fresh",state="updated"}`, "_x20 0x30"},
			// resumed: stuck until 60m, then a node updated at 100m.
			{`shimkit_shim_nodes{shim="resumed",state="matching"}`, "5x50"},
			{`shimkit_shim_nodes{shim="resumed",state="updated"}`, "1x19 2x30"},
		},
		AlertRuleTests: []alertTest{
			at("50m", stalled), // less than 1h of series
			at("62m", stalled), // stuck, hung, resumed pending since 60m
			at("70m", stalled, firing(stalled, shim("hung"), ""), firing(stalled, shim("resumed"), ""), firing(stalled, shim("stuck"), "")),
			at("150m", stalled, firing(stalled, shim("hung"), ""), firing(stalled, shim("stuck"), "")), // resumed updated a node at 100m; fresh is 50m old
			// fresh stuck since it appeared at 100m; resumed since 100m.
			at("180m", stalled, firing(stalled, shim("fresh"), ""), firing(stalled, shim("hung"), ""), firing(stalled, shim("resumed"), ""), firing(stalled, shim("stuck"), "")),
		},
	}, {
		Name:     "ShimkitDriftRepeating: 2 detections on a node within 6h",
		Interval: "10m",
		InputSeries: []series{
			// n1: drift at 1h and 3h10m (a new series: it appears at 1).
			{`shimkit_drift_detected_total{shim="spin",node="n1",pod="a"}`, "_x6 1x12 2x40"},
			// n2: once.
			{`shimkit_drift_detected_total{shim="spin",node="n2",pod="a"}`, "_x6 1x50"},
			// n3: once at the start, then at 6h50m and 7h40m.
			{`shimkit_drift_detected_total{shim="spin",node="n3",pod="a"}`, "1x40 2x4 3x10"},
		},
		AlertRuleTests: []alertTest{
			at("150m", drift),
			at("200m", drift, firing(drift, map[string]string{"shim": "spin", "node": "n1"}, "2")),
			at("430m", drift), // n1's first drift is older than 6h; n3 drifted once within
			at("470m", drift, firing(drift, map[string]string{"shim": "spin", "node": "n3"}, "2")),
		},
	}, {
		Name:     "ShimkitWorkloadGateTripped: a trip within 1h",
		Interval: "1m",
		InputSeries: []series{
			// spin: tripped at 5m (a new series) and at 86m.
			{`shimkit_workload_gate_trips_total{shim="spin",reason="WorkloadFailures",pod="a"}`, "_x5 1x80 2x40"},
			// kata: trips from before Prometheus scraped the operator, none
			// since. A series Prometheus has seen for less than the window
			// counts whole (it cannot tell it from one the operator just
			// created): kata fires until it has been seen for 1h.
			{`shimkit_workload_gate_trips_total{shim="kata",reason="WorkloadFailures",pod="a"}`, "3x130"},
		},
		AlertRuleTests: []alertTest{
			at("3m", gate, firing(gate, map[string]string{"shim": "kata", "reason": "WorkloadFailures"}, "3")),
			at("10m", gate, firing(gate, map[string]string{"shim": "kata", "reason": "WorkloadFailures"}, "3"), firing(gate, map[string]string{"shim": "spin", "reason": "WorkloadFailures"}, "1")),
			at("75m", gate), // spin's trip is more than 1h old
			at("90m", gate, firing(gate, map[string]string{"shim": "spin", "reason": "WorkloadFailures"}, "1")),
		},
	}}
}

// TestAlertRules: the rules the chart renders are valid (promtool check
// rules), with its default bounds and with ci/all-values.yaml's, and each
// alert fires when it should and only then (promtool test rules).
func TestAlertRules(t *testing.T) {
	groups := ruleGroups(t, "--set", "metrics.prometheusRule.enabled=true")
	dir := t.TempDir()
	rules := writeRules(t, dir, groups)
	promtool(t, "check", "rules", rules)

	var names []string
	for _, g := range groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
		}
	}
	if want := []string{"ShimkitDriftRepeating", "ShimkitRolloutStalled", "ShimkitShimDegraded", "ShimkitWorkloadGateTripped"}; !slices.Equal(slices.Sorted(slices.Values(names)), want) {
		t.Fatalf("alerts %v, want %v", names, want)
	}
	tf := testFile{RuleFiles: []string{filepath.Base(rules)}, EvaluationInterval: "1m", Tests: alertTests(t, groups)}
	tested := map[string]bool{}
	for _, g := range tf.Tests {
		for _, a := range g.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				tested[a.Alertname] = true
			}
		}
	}
	for _, n := range names {
		if !tested[n] {
			t.Errorf("alert %s: no test fires it", n)
		}
	}
	data, err := yaml.Marshal(tf)
	if err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(dir, "alerts.test.yaml")
	if err := os.WriteFile(tests, data, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "test", "rules", tests)
}

// TestAlertRulesBounds: the bounds and labels of values.yaml's
// metrics.prometheusRule reach the rules.
func TestAlertRulesBounds(t *testing.T) {
	groups := ruleGroups(t, "-f", filepath.Join(chartDir(), "ci", "all-values.yaml"))
	promtool(t, "check", "rules", writeRules(t, t.TempDir(), groups))
	for _, tc := range []struct {
		alert, severity, forDur string
		expr                    []string
	}{
		{"ShimkitShimDegraded", "critical", "5m", nil},
		{"ShimkitRolloutStalled", "warning", "5m", []string{"[2h]", "offset 2h"}},
		{"ShimkitDriftRepeating", "warning", "", []string{"offset 12h", ">= 3"}},
		{"ShimkitWorkloadGateTripped", "critical", "", []string{"offset 30m"}},
	} {
		r := ruleNamed(t, groups, tc.alert)
		if r.For != tc.forDur || r.Labels["severity"] != tc.severity || r.Labels["team"] != "platform" {
			t.Errorf("%s: for %q labels %v, want for %q, severity %s and team platform", tc.alert, r.For, r.Labels, tc.forDur, tc.severity)
		}
		for _, s := range tc.expr {
			if !strings.Contains(r.Expr, s) {
				t.Errorf("%s: expr lacks %q:\n%s", tc.alert, s, r.Expr)
			}
		}
	}
}
