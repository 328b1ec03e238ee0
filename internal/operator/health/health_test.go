package health_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/operator/health"
)

var (
	since   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	before  = since.Add(-time.Hour)
	after   = since.Add(time.Minute)
	classes = map[string]bool{"wasmtime-spin-v2": true, "wasmtime-spin-v3": true}
	nodes   = map[string]bool{"node-a": true, "node-b": true}
)

// pod is a pod of class on node created at created, with its containers'
// statuses.
func pod(name, class, node string, created time.Time, statuses ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{ContainerStatuses: statuses},
	}
	if class != "" {
		p.Spec.RuntimeClassName = &class
	}
	return p
}

func waiting(reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

// terminated is a termination: started is zero for one that never ran
// (containerd's epoch is as good).
func terminated(reason string, code int32, started, finished time.Time) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Message: reason + " message", StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished)}
}

// backingOff is a container in CrashLoopBackOff after last.
func backingOff(last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: last}}
}

func sandboxEvent(p *corev1.Pod, at time.Time, msg string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: p.Name + ".sandbox", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:         health.ReasonSandboxFailed, Message: msg, Type: corev1.EventTypeWarning,
		FirstTimestamp: metav1.NewTime(at.Add(-time.Minute)), LastTimestamp: metav1.NewTime(at),
	}
}

func TestFailures(t *testing.T) {
	epoch := time.Unix(0, 0)
	sandboxed := pod("sandboxed", "wasmtime-spin-v2", "node-a", after)
	stale := pod("stale-sandbox", "wasmtime-spin-v2", "node-a", before)
	for _, tc := range []struct {
		name   string
		pods   []*corev1.Pod
		events []*corev1.Event
		want   []health.Failure
	}{
		{name: "CreateContainerError", pods: []*corev1.Pod{pod("web-1", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerError", "failed to create containerd container: boom"))},
			want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, Message: "failed to create containerd container: boom", At: after}}},
		{name: "RunContainerError", pods: []*corev1.Pod{pod("web-1", "wasmtime-spin-v3", "node-b", after, waiting("RunContainerError", "failed to start containerd task"))},
			want: []health.Failure{{Node: "node-b", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v3", Reason: health.ReasonRunContainerError, Message: "failed to start containerd task", At: after}}},
		{name: "StartError under CrashLoopBackOff, at its finish", pods: []*corev1.Pod{pod("web-1", "wasmtime-spin-v2", "node-a", before, backingOff(terminated("StartError", 128, epoch, after.Add(time.Second))))},
			want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonStartError, Message: "StartError message", At: after.Add(time.Second)}}},
		{name: "StartError as the current state of a pod that does not restart", pods: []*corev1.Pod{pod("job-1", "wasmtime-spin-v2", "node-a", after,
			corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Terminated: terminated("StartError", 128, epoch, after)}})},
			want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "job-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonStartError, Message: "StartError message", At: after}}},
		{name: "ContainerCannotRun", pods: []*corev1.Pod{pod("web-1", "wasmtime-spin-v2", "node-a", after, backingOff(terminated("ContainerCannotRun", 128, time.Time{}, after)))},
			want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonContainerCannotRun, Message: "ContainerCannotRun message", At: after}}},
		{name: "StartError without a finish time: the pod's", pods: []*corev1.Pod{pod("web-1", "wasmtime-spin-v2", "node-a", after, backingOff(&corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128}))},
			want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonStartError, At: after}}},
		{name: "an init container", pods: []*corev1.Pod{func() *corev1.Pod {
			p := pod("web-1", "wasmtime-spin-v2", "node-a", after, waiting("PodInitializing", ""))
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("CreateContainerError", "init")}
			return p
		}()}, want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, Message: "init", At: after}}},
		{name: "a sandbox Event, the latest of the pod's", pods: []*corev1.Pod{sandboxed},
			events: []*corev1.Event{sandboxEvent(sandboxed, after, "first"), sandboxEvent(sandboxed, after.Add(time.Minute), `failed to get sandbox runtime: no runtime for "spin" is configured`), sandboxEvent(sandboxed, before, "old")},
			want:   []health.Failure{{Node: "node-a", Namespace: "default", Pod: "sandboxed", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonSandboxFailed, Message: `failed to get sandbox runtime: no runtime for "spin" is configured`, At: after.Add(time.Minute)}}},
		{name: "the sandbox goes first", pods: []*corev1.Pod{pod("sandboxed", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerError", "x"))},
			events: []*corev1.Event{sandboxEvent(sandboxed, after, "sandbox")},
			want:   []health.Failure{{Node: "node-a", Namespace: "default", Pod: "sandboxed", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonSandboxFailed, Message: "sandbox", At: after}}},
		{name: "CreateContainerError before StartError, whatever the containers' order", pods: []*corev1.Pod{pod("web-1", "wasmtime-spin-v2", "node-a", after,
			backingOff(terminated("StartError", 128, epoch, after)), waiting("CreateContainerError", "create"))},
			want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, Message: "create", At: after}}},
		{name: "a sandbox Event before since; a stale pod's error; a StartError before since", pods: []*corev1.Pod{stale,
			pod("stuck", "wasmtime-spin-v2", "node-a", before, waiting("CreateContainerError", "since before the update")),
			pod("old-start", "wasmtime-spin-v2", "node-a", before, backingOff(terminated("StartError", 128, epoch, before)))},
			events: []*corev1.Event{sandboxEvent(stale, before, "before the update")}},
		{name: "a stale pod whose readiness changed after since", pods: []*corev1.Pod{func() *corev1.Pod {
			p := pod("web-1", "wasmtime-spin-v2", "node-a", before, waiting("CreateContainerError", "after a restart"))
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, LastTransitionTime: metav1.NewTime(before)}, {Type: corev1.PodReady, LastTransitionTime: metav1.NewTime(after)}}
			return p
		}()}, want: []health.Failure{{Node: "node-a", Namespace: "default", Pod: "web-1", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, Message: "after a restart", At: after}}},
		{name: "application crashes and the kubelet's own failures do not count", pods: []*corev1.Pod{
			pod("crash", "wasmtime-spin-v2", "node-a", after, backingOff(terminated("Error", 1, after, after))),
			pod("oom", "wasmtime-spin-v2", "node-a", after, backingOff(terminated("OOMKilled", 137, after, after))),
			pod("done", "wasmtime-spin-v2", "node-a", after, corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Terminated: terminated("Completed", 0, after, after)}}),
			pod("exit-128", "wasmtime-spin-v2", "node-a", after, backingOff(terminated("Error", 128, after, after))),
			pod("config", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerConfigError", `configmap "app" not found`)),
			pod("pull", "wasmtime-spin-v2", "node-a", after, waiting("ErrImagePull", "not found")),
			pod("backoff", "wasmtime-spin-v2", "node-a", after, waiting("ImagePullBackOff", "")),
			pod("name", "wasmtime-spin-v2", "node-a", after, waiting("InvalidImageName", "")),
			pod("creating", "wasmtime-spin-v2", "node-a", after, waiting("ContainerCreating", "")),
			pod("hook", "wasmtime-spin-v2", "node-a", after, waiting("PostStartHookError", "")),
			pod("recovered", "wasmtime-spin-v2", "node-a", after, corev1.ContainerStatus{Name: "app",
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(after)}},
				LastTerminationState: corev1.ContainerState{Terminated: terminated("StartError", 128, epoch, after)}}),
		}},
		{name: "other classes, other nodes, unscheduled pods, no class", pods: []*corev1.Pod{
			pod("gvisor", "gvisor", "node-a", after, waiting("CreateContainerError", "")),
			pod("elsewhere", "wasmtime-spin-v2", "node-c", after, waiting("CreateContainerError", "")),
			pod("pending", "wasmtime-spin-v2", "", after, waiting("CreateContainerError", "")),
			pod("runc", "", "node-a", after, waiting("CreateContainerError", "")),
			nil,
		}},
		{name: "Events of other reasons or pods", pods: []*corev1.Pod{sandboxed}, events: []*corev1.Event{
			func() *corev1.Event { e := sandboxEvent(sandboxed, after, ""); e.Reason = "BackOff"; return e }(),
			func() *corev1.Event {
				e := sandboxEvent(sandboxed, after, "")
				e.InvolvedObject.UID = "another"
				return e
			}(),
			func() *corev1.Event { e := sandboxEvent(sandboxed, after, ""); e.InvolvedObject.UID = ""; return e }(),
			nil,
		}},
		{name: "sorted by node then pod; one per pod", pods: []*corev1.Pod{
			pod("z", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerError", "")),
			pod("a", "wasmtime-spin-v2", "node-b", after, waiting("CreateContainerError", "")),
			pod("b", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerError", ""), waiting("RunContainerError", "")),
			pod("b", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerError", "")),
		}, want: []health.Failure{
			{Node: "node-a", Namespace: "default", Pod: "b", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, At: after},
			{Node: "node-a", Namespace: "default", Pod: "z", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, At: after},
			{Node: "node-b", Namespace: "default", Pod: "a", RuntimeClass: "wasmtime-spin-v2", Reason: health.ReasonCreateContainerError, At: after},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := health.Failures(tc.pods, tc.events, classes, nodes, since)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailureMessageTruncated(t *testing.T) {
	long := strings.Repeat("é", health.MaxMessage)
	fs := health.Failures([]*corev1.Pod{pod("web-1", "wasmtime-spin-v2", "node-a", after, waiting("CreateContainerError", long))}, nil, classes, nodes, since)
	if len(fs) != 1 || len(fs[0].Message) > health.MaxMessage || !strings.HasSuffix(fs[0].Message, "…") || !strings.HasPrefix(fs[0].Message, "éé") || strings.ContainsRune(fs[0].Message, '\uFFFD') {
		t.Errorf("message %q (%d bytes)", fs[0].Message, len(fs[0].Message))
	}
}

func TestEventTime(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(since.Add(d)) }
	for _, tc := range []struct {
		name string
		e    corev1.Event
		want time.Time
	}{
		{"none", corev1.Event{}, time.Time{}},
		{"lastTimestamp", corev1.Event{FirstTimestamp: at(-time.Hour), LastTimestamp: at(0)}, since},
		{"eventTime", corev1.Event{EventTime: metav1.NewMicroTime(since)}, since},
		{"series", corev1.Event{EventTime: metav1.NewMicroTime(since), Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(since.Add(time.Minute))}}, since.Add(time.Minute)},
		{"the latest set", corev1.Event{LastTimestamp: at(2 * time.Minute), EventTime: metav1.NewMicroTime(since)}, since.Add(2 * time.Minute)},
	} {
		if got := health.EventTime(&tc.e); !got.Equal(tc.want) {
			t.Errorf("%s: EventTime = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func failures(perNode map[string]int) []health.Failure {
	var fs []health.Failure
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		for i := range perNode[node] {
			fs = append(fs, health.Failure{Node: node, Namespace: "default", Pod: node + "-web-" + string(rune('a'+i)), Reason: health.ReasonCreateContainerError, Message: "failed to create\ncontainerd container"})
		}
	}
	return fs
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		t       health.Thresholds
		perNode map[string]int
		tripped bool
		nodes   []string
		message string
	}{
		{name: "nothing fails", t: health.Thresholds{PerNode: 1, Total: 1}},
		{name: "under both limits", t: health.Thresholds{PerNode: 2, Total: 5}, perNode: map[string]int{"node-a": 1, "node-b": 1},
			message: "2 workload pods failing on 2 updated nodes (limit 2 per node, 5 in all): node-a: default/node-a-web-a (CreateContainerError: failed to create containerd container); node-b: default/node-b-web-a (CreateContainerError: failed to create containerd container)"},
		{name: "at the per-node limit", t: health.Thresholds{PerNode: 2, Total: 5}, perNode: map[string]int{"node-a": 1, "node-b": 2}, tripped: true, nodes: []string{"node-b"},
			message: "3 workload pods failing on 2 updated nodes (limit 2 per node, 5 in all): node-b: default/node-b-web-a (CreateContainerError: failed to create containerd container), default/node-b-web-b (CreateContainerError: failed to create containerd container); node-a: default/node-a-web-a (CreateContainerError: failed to create containerd container)"},
		{name: "at the total", t: health.Thresholds{PerNode: 3, Total: 3}, perNode: map[string]int{"node-a": 1, "node-b": 1, "node-c": 1}, tripped: true},
		{name: "no per-node limit", t: health.Thresholds{Total: 10}, perNode: map[string]int{"node-a": 9}},
		{name: "no total", t: health.Thresholds{PerNode: 10}, perNode: map[string]int{"node-a": 9, "node-b": 9, "node-c": 9}},
		{name: "no limit at all", perNode: map[string]int{"node-a": 1},
			message: "1 workload pod failing on 1 updated node (no limit): node-a: default/node-a-web-a (CreateContainerError: failed to create containerd container)"},
		{name: "negative is no limit", t: health.Thresholds{PerNode: -1, Total: -1}, perNode: map[string]int{"node-a": 1}},
		{name: "two nodes over, at most five named", t: health.Thresholds{PerNode: 3}, perNode: map[string]int{"node-a": 3, "node-b": 1, "node-c": 4}, tripped: true, nodes: []string{"node-a", "node-c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := failures(tc.perNode)
			v := tc.t.Check(fs)
			if v.Tripped != tc.tripped || !cmp.Equal(v.Nodes, tc.nodes) || len(v.Failures) != len(fs) {
				t.Errorf("Check = tripped %v, nodes %v, %d failures; want %v, %v, %d", v.Tripped, v.Nodes, len(v.Failures), tc.tripped, tc.nodes, len(fs))
			}
			if tc.message != "" && v.Message != tc.message {
				t.Errorf("message\n %q\nwant\n %q", v.Message, tc.message)
			}
			if (v.Message == "") != (len(fs) == 0) {
				t.Errorf("message %q for %d failures", v.Message, len(fs))
			}
		})
	}
}

// TestCheckMessageBounded: however many pods fail, the message names five,
// those on the nodes over the limit first, and counts the rest.
func TestCheckMessageBounded(t *testing.T) {
	v := health.Thresholds{PerNode: 3}.Check(failures(map[string]int{"node-a": 2, "node-b": 1, "node-c": 200}))
	want := "203 workload pods failing on 3 updated nodes (limit 3 per node): node-c: default/node-c-web-a"
	if !strings.HasPrefix(v.Message, want) || !strings.HasSuffix(v.Message, "; and 198 more") || strings.Count(v.Message, "default/") != health.MaxNamed || strings.Contains(v.Message, "node-a") {
		t.Errorf("message %q", v.Message)
	}
}

// TestImportBoundary keeps the package pure: free of client-go and
// controller-runtime.
func TestImportBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/shimkit/shimkit/internal/operator/health").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go/", "sigs.k8s.io/controller-runtime"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("health depends on %s", dep)
			}
		}
	}
}

// TestCheckCountsLostHandlers: an updated node whose kubelet lost one of
// the Shim's handlers counts against the limits like a failing pod, and
// the message says so without naming a pod.
func TestCheckCountsLostHandlers(t *testing.T) {
	fs := []health.Failure{
		{Node: "node-a", Namespace: "default", Pod: "web-1", Reason: health.ReasonCreateContainerError, Message: "shim not found"},
		{Node: "node-a", Reason: health.ReasonHandlerMissing, Message: "handler spin is not served"},
	}
	v := health.Thresholds{PerNode: 2}.Check(fs)
	want := "1 workload pod failing and 1 handler lost on 1 updated node (limit 2 per node): node-a: default/web-1 (CreateContainerError: shim not found), the node (HandlerMissing: handler spin is not served)"
	if !v.Tripped || v.Message != want {
		t.Errorf("Check = %v %q, want tripped, %q", v.Tripped, v.Message, want)
	}
}
