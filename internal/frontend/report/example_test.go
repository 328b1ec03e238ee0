package report_test

import (
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Status turns how a Shim sees each node (operator.NodeViews, from the
// lists an operator or a tool read once) into the rows of kubectl shimkit
// status.
func ExampleStatus() {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-spin"},
		Spec:   v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin"}},
		Status: v1alpha1.ShimStatus{SpecHash: "5d41402abc4b2a76"}}
	done := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{record.Key("spin"): record.Installed},
		Annotations: map[string]string{record.Key("spin"): "5d41402abc4b2a76", // with the install's record, as nodelabel.Mark writes them
			record.VerifiedKey("spin"): `{"shimUID":"uid-spin","specHash":"5d41402abc4b2a76","time":"2026-11-26T09:00:00Z"}`}}}
	done.Status.NodeInfo.ContainerRuntimeVersion = "containerd://2.2.0"
	crio := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	crio.Status.NodeInfo.ContainerRuntimeVersion = "cri-o://1.34.0"
	rows := report.Status(shim, decide.NodeViewsOf(shim, []*corev1.Node{done, crio}, nil, nil))
	_ = report.WriteStatus(os.Stdout, report.StatusOf(shim, rows), false, time.Now())
	// Output:
	// Shim spin: 2 nodes: 1 Current, 1 Skipped; Ready=Unknown
	// NODE  RUNTIME             STATE    REVISION          SINCE  REASON
	// n1    containerd://2.2.0  Current  5d41402abc4b2a76  -      -
	// n2    cri-o://1.34.0      Skipped  -                 -      RuntimeNotSupported
}
