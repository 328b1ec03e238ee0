package workload_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/internal/operator/health"
	"github.com/shimkit/shimkit/internal/operator/workload"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// requestLog records the paths and queries of the pod and Event requests
// a client makes.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) RoundTrip(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if p := req.URL.Path; strings.HasSuffix(p, "/pods") || strings.HasSuffix(p, "/events") {
			l.mu.Lock()
			l.seen = append(l.seen, p+"?"+req.URL.RawQuery)
			l.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// workloadPod creates a pod of class (none when "") on node in namespace,
// then writes its status (through the status subresource, as the kubelet
// does).
func workloadPod(t *testing.T, c client.Client, namespace, name, class, node string, status corev1.PodStatus) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	if class != "" {
		p.Spec.RuntimeClassName = &class
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = status
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func appStatus(cs corev1.ContainerStatus) corev1.PodStatus {
	cs.Name, cs.Image = "app", "registry.example/app:1"
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{cs}}
}

func waitingStatus(reason, msg string) corev1.PodStatus {
	return appStatus(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}})
}

// crashLooping is a container backing off after last.
func crashLooping(last corev1.ContainerStateTerminated) corev1.PodStatus {
	return appStatus(corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}},
		LastTerminationState: corev1.ContainerState{Terminated: &last},
	})
}

// sandboxFailed creates the kubelet's FailedCreatePodSandBox Event of the
// pod, last seen at.
func sandboxFailed(t *testing.T, c client.Client, p *corev1.Pod, at time.Time, msg string) {
	t.Helper()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: p.Name + ".sandbox", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:         health.ReasonSandboxFailed, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName},
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
	}
	if err := c.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// TestWorkloadFailures, on a real API server: the pods of the Shim's
// RuntimeClasses on the updated nodes that the runtime failed are found
// through the manager's cache (in every namespace), and no others: not
// another class's, not another node's, not an application's crash or a
// missing ConfigMap, not a sandbox failure older than since. The pod and
// Event informers start on the first read, not with the manager; the
// cache's index lists by RuntimeClass in one namespace and in all; the
// installer's namespace's pods are cached whole and others trimmed; a
// client without a cache (the API server's) finds the same failures.
func TestWorkloadFailures(t *testing.T) {
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	c := env.Client
	ctx := context.Background()
	for _, ns := range []string{"shimkit-system", "apps"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, rc := range []string{"wasm-a", "wasm-b", "gvisor"} {
		if err := c.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: rc}, Handler: rc}); err != nil {
			t.Fatal(err)
		}
	}
	since := time.Now().Add(-time.Minute).Truncate(time.Second)
	epoch := metav1.NewTime(time.Unix(0, 0))
	startFailed := metav1.NewTime(time.Now().Truncate(time.Second))

	workloadPod(t, c, "default", "web-1", "wasm-a", "n1", waitingStatus("CreateContainerError", "failed to create containerd container: shim missing"))
	workloadPod(t, c, "apps", "run-1", "wasm-b", "n1", waitingStatus("RunContainerError", "failed to start containerd task"))
	workloadPod(t, c, "default", "start-1", "wasm-b", "n2", crashLooping(corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, StartedAt: epoch, FinishedAt: startFailed, Message: "failed to create shim task"}))
	sandboxed := workloadPod(t, c, "default", "sandbox-1", "wasm-a", "n1", waitingStatus("ContainerCreating", ""))
	sandboxFailed(t, c, sandboxed, time.Now(), `failed to get sandbox runtime: no runtime for "wasm-a" is configured`)
	// None of these count.
	crash := workloadPod(t, c, "default", "crash-1", "wasm-a", "n1", crashLooping(corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, StartedAt: startFailed, FinishedAt: startFailed}))
	workloadPod(t, c, "default", "config-1", "wasm-a", "n2", waitingStatus("CreateContainerConfigError", `configmap "app" not found`))
	workloadPod(t, c, "default", "pull-1", "wasm-a", "n2", waitingStatus("ImagePullBackOff", "Back-off pulling image"))
	workloadPod(t, c, "default", "gvisor-1", "gvisor", "n1", waitingStatus("CreateContainerError", "another runtime"))
	workloadPod(t, c, "default", "elsewhere-1", "wasm-a", "n3", waitingStatus("CreateContainerError", "a node not updated"))
	workloadPod(t, c, "default", "plain-1", "", "n1", waitingStatus("CreateContainerError", "no RuntimeClass"))
	old := workloadPod(t, c, "default", "old-sandbox", "wasm-b", "n2", waitingStatus("ContainerCreating", ""))
	sandboxFailed(t, c, old, since.Add(-time.Hour), "before the rollout")
	installer := workloadPod(t, c, "shimkit-system", "installer-n1", "", "n1", appStatus(corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", Message: `{"result":"ok"}`}}}))

	var requests requestLog
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(requests.RoundTrip)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      operator.CacheOptions("shimkit-system"),
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := operator.New(mgr.GetClient(), nil, operator.Options{InstallerImage: "shimkit-installer:test", Namespace: "shimkit-system"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache not synced")
	}
	time.Sleep(200 * time.Millisecond) // the controller's informers, started: none of pods or Events
	if got := requests.requests(); len(got) > 0 {
		t.Fatalf("pods or Events read before any gate: %v", got)
	}

	classes, nodes := []string{"wasm-a", "wasm-b"}, map[string]bool{"n1": true, "n2": true}
	start := time.Now()
	got, err := workload.Failures(ctx, mgr.GetClient(), classes, nodes, since)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first read (informers started and synced) in %s", time.Since(start).Round(time.Millisecond))
	want := []health.Failure{
		{Node: "n1", Namespace: "apps", Pod: "run-1", RuntimeClass: "wasm-b", Reason: health.ReasonRunContainerError, Message: "failed to start containerd task"},
		{Node: "n1", Namespace: "default", Pod: "sandbox-1", RuntimeClass: "wasm-a", Reason: health.ReasonSandboxFailed, Message: `failed to get sandbox runtime: no runtime for "wasm-a" is configured`},
		{Node: "n1", Namespace: "default", Pod: "web-1", RuntimeClass: "wasm-a", Reason: health.ReasonCreateContainerError, Message: "failed to create containerd container: shim missing"},
		{Node: "n2", Namespace: "default", Pod: "start-1", RuntimeClass: "wasm-b", Reason: health.ReasonStartError, Message: "failed to create shim task"},
	}
	ignoreAt := cmpopts.IgnoreFields(health.Failure{}, "At")
	if diff := cmp.Diff(want, got, ignoreAt); diff != "" {
		t.Errorf("Failures through the cache (-want +got):\n%s", diff)
	}
	for _, f := range got {
		if f.At.Before(since) || f.Reason == health.ReasonStartError && !f.At.Equal(startFailed.Time) {
			t.Errorf("%s/%s seen at %v (since %v)", f.Namespace, f.Pod, f.At, since)
		}
	}
	var podsWatch, eventsWatch bool
	for _, req := range requests.requests() {
		podsWatch = podsWatch || strings.HasPrefix(req, "/api/v1/pods?") && strings.Contains(req, "watch=true")
		eventsWatch = eventsWatch || strings.HasPrefix(req, "/api/v1/events?") && strings.Contains(req, "fieldSelector=reason%3DFailedCreatePodSandBox") && strings.Contains(req, "watch=true")
	}
	if !podsWatch || !eventsWatch {
		t.Errorf("after the first read, want a cluster-wide watch of pods and of the sandbox Events: %v", requests.requests())
	}

	// The index, in one namespace and in all.
	var list corev1.PodList
	if err := mgr.GetClient().List(ctx, &list, client.InNamespace("apps"), client.MatchingFields{workload.PodRuntimeClassField: "wasm-b"}); err != nil || len(list.Items) != 1 || list.Items[0].Name != "run-1" {
		t.Errorf("wasm-b pods in apps: %d (%v)", len(list.Items), err)
	}
	if err := mgr.GetClient().List(ctx, &list, client.MatchingFields{workload.PodRuntimeClassField: "wasm-a"}); err != nil || len(list.Items) != 6 {
		t.Errorf("wasm-a pods: %d (%v), want 6", len(list.Items), err)
	}
	// The installer's pods whole, the others trimmed.
	var p corev1.Pod
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(installer), &p); err != nil || p.Labels["app"] != "installer-n1" || len(p.Spec.Containers) != 1 ||
		p.Status.ContainerStatuses[0].State.Terminated.Message != `{"result":"ok"}` {
		t.Errorf("installer pod from the cache: %+v (%v)", p, err)
	}
	if err := mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-1"}, &p); err != nil || p.Labels["app"] != "web-1" || len(p.Labels) != 1 || p.Spec.Containers != nil || p.Status.ContainerStatuses[0].Image != "" ||
		p.Status.ContainerStatuses[0].State.Waiting.Reason != "CreateContainerError" || *p.Spec.RuntimeClassName != "wasm-a" || p.Spec.NodeName != "n1" {
		t.Errorf("workload pod from the cache: %+v (%v)", p, err)
	}

	// A crash-looping pod whose restart the runtime then fails is seen
	// when its status changes.
	crash.Status = crashLooping(corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, StartedAt: epoch, FinishedAt: metav1.NewTime(time.Now()), Message: "shim died"})
	if err := c.Status().Update(ctx, crash); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = workload.Failures(ctx, mgr.GetClient(), classes, nodes, since)
		if i := slices.IndexFunc(got, func(f health.Failure) bool { return f.Pod == "crash-1" }); err == nil && len(got) == 5 && i == 1 && got[i].Reason == health.ReasonStartError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crash-1's StartError not seen: %+v (%v)", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Without a cache: the API server has no index, and all its pods are
	// listed.
	gotLive, err := workload.Failures(ctx, c, classes, nodes, since)
	if err != nil || !cmp.Equal(got, gotLive) {
		t.Errorf("Failures from the API server: %v\n%+v\nwant\n%+v", err, gotLive, got)
	}
	if got, err := workload.Failures(ctx, mgr.GetClient(), nil, nodes, since); got != nil || err != nil {
		t.Errorf("no classes: %v, %v", got, err)
	}

	// The pods a removal waits for: every pod of the classes bound to a
	// node that has not ended, through the cache and from the API server.
	ended := appStatus(corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}})
	ended.Phase = corev1.PodSucceeded
	workloadPod(t, c, "default", "done-1", "wasm-a", "n1", ended)
	wantOn := map[string][]string{
		"n1": {"apps/run-1", "default/crash-1", "default/sandbox-1", "default/web-1"},
		"n2": {"default/config-1", "default/old-sandbox", "default/pull-1", "default/start-1"},
		"n3": {"default/elsewhere-1"},
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		on, err := workload.PodsOn(ctx, mgr.GetClient(), classes)
		if err == nil && cmp.Equal(on, wantOn) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PodsOn through the cache: %v (%v), want %v", on, err, wantOn)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if on, err := workload.PodsOn(ctx, c, classes); err != nil || !cmp.Equal(on, wantOn) {
		t.Errorf("PodsOn from the API server: %v (%v), want %v", on, err, wantOn)
	}
}

// TestTrimPodAndEvent: the cache's pods keep what health.Failures reads
// (and the installer's namespace's pods everything); its Events what the
// gate reads, with a message cut.
func TestTrimPodAndEvent(t *testing.T) {
	class := "wasm-a"
	at := metav1.NewTime(time.Unix(1700000000, 0))
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1", ResourceVersion: "7", CreationTimestamp: at,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, OwnerReferences: []metav1.OwnerReference{{Name: "rs"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "n1", RuntimeClassName: &class, Containers: []corev1.Container{{Name: "app", Image: "x"}}, Volumes: []corev1.Volume{{Name: "v"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at, Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", Image: "y", ImageID: "sha256:y", Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: at, FinishedAt: at, ContainerID: "containerd://1"}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "x", ImageID: "sha256:x", RestartCount: 3,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: strings.Repeat("m", 2000)}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, FinishedAt: at, Message: "boom", ContainerID: "containerd://2"}}}},
		},
	}
	out, err := workload.TrimPod("shimkit-system")(full.DeepCopy())
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1", ResourceVersion: "7", CreationTimestamp: at, Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{NodeName: "n1", RuntimeClassName: &class},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: at, FinishedAt: at}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: strings.Repeat("m", 2*health.MaxMessage)}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, FinishedAt: at, Message: "boom"}}}},
		},
	}
	if diff := cmp.Diff(want, out); diff != "" || err != nil {
		t.Errorf("TrimPod (-want +got):\n%s (%v)", diff, err)
	}
	// Another class's pods keep as much (the index needs the class); a
	// pod without a RuntimeClass, what a drain reads.
	plain := full.DeepCopy()
	plain.Spec.RuntimeClassName = nil
	plain.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}, {Kind: "Other", Name: "x"}}
	plain.Annotations["kubernetes.io/config.mirror"] = "abc"
	plain.Spec.Volumes = append(plain.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "Memory"}}})
	wantPlain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
		Annotations: map[string]string{"kubernetes.io/config.mirror": "abc"}, OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: "n1", Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if out, _ := workload.TrimPod("shimkit-system")(plain); !cmp.Equal(out, wantPlain) {
		t.Errorf("TrimPod of a pod without a RuntimeClass: %+v", out)
	}
	installer := full.DeepCopy()
	installer.Namespace = "shimkit-system"
	if out, _ := workload.TrimPod("shimkit-system")(installer); !cmp.Equal(out, installer) {
		t.Errorf("TrimPod changed an installer pod: %+v", out)
	}
	if out, _ := workload.TrimPod("shimkit-system")(&corev1.Node{}); !cmp.Equal(out, &corev1.Node{}) {
		t.Errorf("TrimPod of a Node: %+v", out)
	}

	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-1.1", Namespace: "default", UID: "e1", ResourceVersion: "9", Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "u1", APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec"},
		Reason:         health.ReasonSandboxFailed, Message: strings.Repeat("é", health.MaxMessage), Type: corev1.EventTypeWarning, Count: 4,
		Source: corev1.EventSource{Component: "kubelet", Host: "n1"}, FirstTimestamp: at, LastTimestamp: at,
		Series: &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(at.Time)}, ReportingController: "kubelet", ReportingInstance: "n1",
	}
	out, err = workload.TrimEvent(e)
	te := out.(*corev1.Event)
	if err != nil || te.Labels != nil || te.ManagedFields != nil || te.ReportingController != "" || te.InvolvedObject != (corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "u1"}) ||
		te.Reason != health.ReasonSandboxFailed || len(te.Message) != 2*health.MaxMessage || te.Series == nil || !te.LastTimestamp.Equal(&at) || te.Source.Host != "n1" || te.UID != "e1" {
		t.Errorf("TrimEvent: %+v (%v)", te, err)
	}
}
