package decide

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestTelling: each start says, before its Job is created, that a
// drifted node is installed again (for the Shim and each partner, with
// the count), and once it is, the node's note naming the Job and each
// partner's Event regarding that partner.
func TestTelling(t *testing.T) {
	shim := decideShim()
	other := decideShim()
	other.Name = "wasm"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	partner := func(drifted string) Partner {
		return Partner{Offer: &nodegate.Offer{Shim: other, Drifted: map[string]string{"n1": drifted}}, Plan: &plan.NodePlan{Node: "n1"}, Reason: "Upgrading"}
	}
	for _, tc := range []struct {
		name          string
		op, drifted   string
		partners      []Partner
		before, after []string
	}{
		{name: "install", op: jobview.OpInstall,
			after: []string{"note Installing: node n1 (Job J)"}},
		{name: "install of a drifted node", op: jobview.OpInstall, drifted: "handler spin",
			before: []string{"event Warning Drifted: node n1 drifted (handler spin): installing the shim again", "count drift spin n1"},
			after:  []string{"note Installing: node n1 (Job J)"}},
		{name: "uninstall of a drifted node: no drift said", op: jobview.OpUninstall, drifted: "handler spin",
			after: []string{"note Installing: node n1 (Job J)"}},
		{name: "batch, the partner drifted", op: jobview.OpInstall, partners: []Partner{partner("a file")},
			before: []string{"event Warning Drifted about wasm: node n1 drifted (a file): installing the shim again", "count drift wasm n1"},
			after: []string{"event Normal Upgrading about wasm: node n1: with Shim spin in one installer run, one containerd restart (Job J)",
				"note Installing: node n1 with Shims wasm (Job J)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &Snapshot{Shim: shim}
			st := []Start{{View: &NodeView{Node: node, Drifted: tc.drifted}, Op: tc.op, Reason: "Installing", Action: OpAction(tc.op),
				Reserve: nodegate.Reservation{Node: "n1", Job: "J"}, Partners: tc.partners}}
			telling(obs, st)
			if got := describeActs(st[0].Before); strings.Join(got, "\n") != strings.Join(tc.before, "\n") {
				t.Errorf("before:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.before, "\n"))
			}
			if got := describeActs(st[0].After); strings.Join(got, "\n") != strings.Join(tc.after, "\n") {
				t.Errorf("after:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.after, "\n"))
			}
		})
	}
}

// TestEventsBack: a plan whose per-node notes are held back (the earlier
// reconciles', or its own: a note, a Job started) comes back when they
// are due, unless it comes back sooner; one that emits them, or has none,
// keeps its requeue.
func TestEventsBack(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	held := EventPlan{Due: now.Add(4 * time.Second)}
	start := []Start{{}}
	note := []Action{Together{InOrder{Note{Reason: "Installed"}}}}
	for _, tc := range []struct {
		name    string
		events  EventPlan
		held    bool // the snapshot's
		starts  []Start
		records []Action
		after   time.Duration
		want    time.Duration
	}{
		{name: "emitted", events: EventPlan{Emit: true}, held: true, starts: start, after: time.Minute, want: time.Minute},
		{name: "held, none gathered", events: held, after: time.Minute, want: time.Minute},
		{name: "held from before", events: held, held: true, after: time.Minute, want: 4 * time.Second},
		{name: "held from before, no requeue", events: held, held: true, want: 4 * time.Second},
		{name: "a Job started", events: held, starts: start, after: time.Minute, want: 4 * time.Second},
		{name: "a note in a group", events: held, records: note, after: time.Minute, want: 4 * time.Second},
		{name: "back sooner anyway", events: held, held: true, after: time.Second, want: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &Snapshot{Shim: &v1alpha1.Shim{}, Now: now, EventsHeld: tc.held}
			p := &Plan{Events: tc.events, Starts: tc.starts, Records: tc.records}
			if got := eventsBack(obs, p, tc.after); got != tc.want {
				t.Errorf("requeue %v, want %v", got, tc.want)
			}
		})
	}
}
