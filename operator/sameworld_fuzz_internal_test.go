package operator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// fuzzNow is the rollout clock of a fuzzed world, for the operator and
// kubectl shimkit plan alike (maintenance windows are judged by it).
var fuzzNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// Node states of a fuzzed world (a node's byte, low three bits).
const (
	nodeFresh = iota
	nodeOld
	nodeCurrent
	nodeFailed
	nodeRunning
	nodeSucceeded
	nodeJobFailed
	nodeImmutable
)

// fuzzWorld builds a cluster as objects from bytes: a node per byte of
// states (its state, whether the Shim selects it, containerd or CRI-O,
// whether the retry request names it), and the Shim from flags (maxUpdate,
// a retry request and whether the operator acted on it, rollout steps, a
// pause, a closed maintenance window).
func fuzzWorld(t *testing.T, states []byte, flags uint8) objectWorld {
	t.Helper()
	mu := intstr.FromInt32(int32(flags&3) + 1)
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "fz", UID: "fz-uid", Finalizers: []string{Finalizer}},
		Spec: v1alpha1.ShimSpec{
			NodeSelector: map[string]string{"pool": "fz"},
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
				Location: "https://artifacts.invalid/fz.tar.gz", SHA256: strings.Repeat("b", 64)}},
			RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: "fz-rc", Handler: "fz"},
			RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &mu}},
		},
	}
	rs := shim.Spec.RolloutStrategy
	if flags&16 != 0 {
		bake := metav1.Duration{Duration: 30 * time.Minute}
		rs.Steps = []v1alpha1.RolloutStep{{Nodes: intstr.FromInt32(1), Bake: &bake}, {Nodes: intstr.FromString("100%")}}
	}
	rs.Paused = flags&32 != 0
	if flags&64 != 0 {
		rs.Windows = []v1alpha1.MaintenanceWindow{{Start: "20:00", End: "22:00", TimeZone: "UTC"}}
	}
	obs := decide.NewSnapshot(shim, sameWorldOptions.withDefaults().settings(), fuzzNow, fuzzNow)
	obs.Aim(shimspec.PinOf(shim, obs.SpecHash))
	target := obs.Hash
	shim.Status.SpecHash = target
	var named []string
	w := objectWorld{shim: shim}
	for i, b := range states {
		n := fuzzNode(t, shim, fmt.Sprintf("n%02d", i), b, target)
		if b&32 != 0 {
			named = append(named, n.Name)
		}
		w.nodes = append(w.nodes, n)
		if j := fuzzJob(t, shim, n, b&7, target); j != nil {
			w.jobs = append(w.jobs, j)
		}
	}
	if flags&4 != 0 {
		req := strings.Join(named, ",") + "@1"
		shim.Annotations = map[string]string{v1alpha1.RetryAnnotation: req}
		if flags&8 != 0 {
			shim.Status.Retried, shim.Status.RetriedSpecHash = req, target
		}
	}
	return w
}

// fuzzNode is a node in one of the states, selected or not, running
// containerd or CRI-O.
func fuzzNode(t *testing.T, shim *v1alpha1.Shim, name string, b byte, target string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.2.0", OSImage: "Debian GNU/Linux 12 (bookworm)"}
	if b&8 == 0 {
		n.Labels["pool"] = "fz"
	}
	if b&16 != 0 {
		n.Status.NodeInfo.ContainerRuntimeVersion = "cri-o://1.34.0"
	}
	switch b & 7 {
	case nodeOld, nodeImmutable:
		n.Labels[record.Key(shim.Name)], n.Annotations[record.Key(shim.Name)] = record.Installed, "old"
		if b&7 == nodeImmutable {
			n.Status.NodeInfo.OSImage = "Flatcar Container Linux by Kinvolk 4152.2.0"
		}
	case nodeCurrent:
		n.Labels[record.Key(shim.Name)], n.Annotations[record.Key(shim.Name)] = record.Installed, target
	case nodeFailed:
		failed(t, n, shim, target)
	}
	return n
}

// fuzzJob is the node's install Job of the target, as the operator
// creates it, running or finished (nil: the state has none).
func fuzzJob(t *testing.T, shim *v1alpha1.Shim, n *corev1.Node, state byte, target string) *batchv1.Job {
	t.Helper()
	if state != nodeRunning && state != nodeSucceeded && state != nodeJobFailed {
		return nil
	}
	r, err := New(nil, nil, sameWorldOptions)
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPlan(shim, n, plan.OpInstall, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	j, err := r.starter.buildJob(shim, n, p, target, nodeview.ImageWay("", n))
	if err != nil {
		t.Fatal(err)
	}
	j.UID = types.UID("job-" + n.Name)
	start := metav1.NewTime(fuzzNow.Add(-time.Minute))
	j.Status.StartTime = &start
	switch state {
	case nodeRunning:
		j.Status.Active = 1
	case nodeSucceeded:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	case nodeJobFailed:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
	}
	return j
}

// FuzzPlanIsTheReconcile: on a cluster of objects (nodes in every state,
// Jobs running and finished, a retry acted on or new, steps, a pause, a
// closed window, containerd and CRI-O nodes, nodes skipped), kubectl
// shimkit plan's first wave (PreviewRollout's StartNow) is the install
// Jobs one reconcile of the operator starts on a fake API server holding
// the same objects. The seeds run in make test.
func FuzzPlanIsTheReconcile(f *testing.F) {
	f.Add([]byte{nodeFresh, nodeFresh, nodeOld, nodeCurrent}, uint8(1))
	f.Add([]byte{nodeFailed | 32, nodeFailed, nodeFresh, nodeFresh}, uint8(0|4|8))
	f.Add([]byte{nodeFailed | 32, nodeFailed, nodeFresh}, uint8(0|4))
	f.Add([]byte{nodeFresh | 32, nodeFailed, nodeFresh}, uint8(0|4|8))
	f.Add([]byte{nodeRunning, nodeSucceeded, nodeJobFailed, nodeFresh, nodeOld}, uint8(2))
	f.Add([]byte{nodeOld | 8, nodeImmutable, nodeFresh | 16, nodeOld | 16}, uint8(3))
	f.Add([]byte{nodeFresh, nodeFresh, nodeFresh, nodeCurrent}, uint8(1|16))
	f.Add([]byte{nodeFresh, nodeOld, nodeFresh}, uint8(32))
	f.Add([]byte{nodeFresh, nodeOld, nodeFresh}, uint8(64|1))
	f.Fuzz(func(t *testing.T, states []byte, flags uint8) {
		if len(states) == 0 || len(states) > 12 {
			return
		}
		w := fuzzWorld(t, states, flags)
		opts := sameWorldOptions
		opts.Clock = clocktesting.NewFakePassiveClock(fuzzNow)
		got := reconcileStartsWith(t, w, opts)
		p, err := PreviewRollout(w.shim, w.nodes, w.jobs, func(*batchv1.Job) *plan.NodeResult { return nil }, []nodev1.RuntimeClass(nil), opts, fuzzNow)
		if err != nil {
			t.Fatal(err)
		}
		planned := slices.Sorted(slices.Values(p.StartNow))
		if !slices.Equal(got, planned) {
			t.Errorf("the reconcile started %v, plan's first wave is %v (states %v, flags %#x)", got, planned, states, flags)
		}
	})
}
