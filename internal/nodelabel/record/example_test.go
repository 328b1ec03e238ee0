package record_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// A Shim created again under the name of one deleted without cleaning its
// nodes finds that one's failure stale, not its own.
func ExampleRecordsOf() {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{"shim.containerd.x-k8s.io/spin": "installed"},
		Annotations: map[string]string{
			"shim.containerd.x-k8s.io/spin": "5d41402abc4b2a76",
			record.FailureKey("spin"):       `{"shimUID":"uid-old","op":"install","reason":"Conflict","time":"2026-11-25T06:00:00Z"}`,
		},
	}}
	installed, hash := record.State(node, "spin")
	successor := record.RecordsOf(node, "spin", "uid-new")
	fmt.Println(installed, hash, successor.Failure == nil, successor.Stale)
	// Output: true 5d41402abc4b2a76 true [failed.shim.containerd.x-k8s.io/spin]
}
