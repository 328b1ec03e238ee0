package phase_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRecorder: an Event emitted while the reconcile observes is reported
// and dropped; once it acts, or outside a reconcile, the Event is emitted;
// without a report nothing is checked.
func TestRecorder(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}}
	n := decide.Notice{Type: corev1.EventTypeNormal, Reason: "Installed", Action: "Install", Note: "node n1",
		Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
	observing := phase.Start(context.Background())
	acting := phase.Start(context.Background())
	phase.Decided(acting)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		check    bool
		emitted  bool
		reported bool
	}{
		{"observing", observing, true, false, true},
		{"acting", acting, true, true, false},
		{"outside a reconcile", context.Background(), true, true, false},
		{"observing, unchecked", observing, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(1)
			var reports []error
			var report phase.Report
			if tc.check {
				report = func(err error) { reports = append(reports, err) }
			}
			phase.NewRecorder(rec, report).Say(tc.ctx, shim, n)
			if got := len(rec.Events) == 1; got != tc.emitted {
				t.Errorf("emitted = %v, want %v", got, tc.emitted)
			}
			if got := len(reports) == 1; got != tc.reported {
				t.Fatalf("reported %v, want %v", reports, tc.reported)
			}
			if tc.reported && !errors.Is(reports[0], phase.ErrEventBeforeDecision) {
				t.Errorf("report = %v, want ErrEventBeforeDecision", reports[0])
			}
		})
	}
	var none *phase.Recorder
	none.Say(acting, shim, n)
	phase.NewRecorder(nil, nil).Say(acting, shim, n)
}
