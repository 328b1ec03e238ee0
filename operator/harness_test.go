package operator_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const jobNamespace = "shimkit-system"

// startCluster starts a real API server with the Shim CRD and the Jobs'
// namespace.
func startCluster(t testing.TB) *testutil.Env {
	t.Helper()
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobNamespace}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return env
}

// startOperator runs the reconciler in a manager until the returned stop
// is called (or the test ends).
func startOperator(t testing.TB, env *testutil.Env) (stop func()) {
	t.Helper()
	return startOperatorAs(t, env, env.Config)
}

// startOperatorAs runs the operator with cfg's credentials, its Job cache
// limited to the Jobs' namespace as in shimkit-operator.
func startOperatorAs(t testing.TB, env *testutil.Env, cfg *rest.Config) (stop func()) {
	t.Helper()
	return startOperatorWith(t, env, cfg, nil)
}

// startOperatorWith runs the operator with options changed by mutate.
func startOperatorWith(t testing.TB, env *testutil.Env, cfg *rest.Config, mutate func(*operator.Options)) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:                  operator.CacheOptions(jobNamespace),
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := operator.Options{InstallerImage: "shimkit-installer:test", Namespace: jobNamespace, ResyncPeriod: 2 * time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	r, err := operator.New(mgr.GetClient(), mgr.GetEventRecorder("shimkit"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// startOperatorResolving runs the operator with an in-memory resolver:
// for tests of something else than resolution, whose registries do not
// exist. It creates the pull secrets the Shims name.
func startOperatorResolving(t testing.TB, env *testutil.Env, pins operator.StaticResolver, pullSecrets ...string) (stop func()) {
	t.Helper()
	for _, name := range pullSecrets {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: jobNamespace}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
		}
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.Resolver = pins })
}

// kubelet stands in for the nodes: after a delay it marks each Job of the
// namespace succeeded, or failed when fail says so. It records how many
// Jobs of each shim ran at once. With pod set (startPodKubelet), each Job
// gets a pod that ends as pod says, with its exit code and termination
// message, and the Job ends as the Job controller would end it.
type kubelet struct {
	c     client.Client
	delay time.Duration
	fail  func(job *batchv1.Job) bool
	pod   func(ctx context.Context, job *batchv1.Job) podRun

	mu        sync.Mutex
	maxRun    map[string]int
	maxNode   map[string]int       // most Jobs (of any Shim) running at once on a node
	maxTotal  int                  // most Jobs running at once
	seen      map[string]time.Time // when each Job was first seen (creation timestamps have 1s granularity)
	finishing map[string]bool
	finished  atomic.Int64
}

func startKubelet(t testing.TB, env *testutil.Env, delay time.Duration, fail func(*batchv1.Job) bool) *kubelet {
	t.Helper()
	return startKubeletWith(t, env, &kubelet{delay: delay, fail: fail})
}

// startPodKubelet starts a kubelet that runs each Job's pod with run.
func startPodKubelet(t testing.TB, env *testutil.Env, delay time.Duration, run func(context.Context, *batchv1.Job) podRun) *kubelet {
	t.Helper()
	return startKubeletWith(t, env, &kubelet{delay: delay, pod: run})
}

func startKubeletWith(t testing.TB, env *testutil.Env, k *kubelet) *kubelet {
	t.Helper()
	// Read Jobs from a watch-fed cache, as a kubelet would, not by listing
	// them again and again (which would load the API server).
	jobs, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{jobNamespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	// Many kubelets write at once: no client-side rate limit.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	k.c, k.maxRun, k.seen, k.finishing, k.maxNode = c, map[string]int{}, map[string]time.Time{}, map[string]bool{}, map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = jobs.Start(ctx); done <- struct{}{} }()
	if !jobs.WaitForCacheSync(ctx) {
		t.Fatal("job cache did not sync")
	}
	go func() { k.run(ctx, jobs); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return k
}

func (k *kubelet) run(ctx context.Context, reader client.Reader) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		var jobs batchv1.JobList
		if err := reader.List(ctx, &jobs, client.InNamespace(jobNamespace)); err == nil {
			running, onNode, total := map[string]int{}, map[string]int{}, 0
			for i := range jobs.Items {
				j := &jobs.Items[i]
				if finished(j) || j.DeletionTimestamp != nil {
					continue
				}
				running[j.Labels["shim.containerd.x-k8s.io/shim"]]++
				onNode[j.Spec.Template.Spec.NodeName]++
				total++
				first, ok := k.seen[string(j.UID)]
				if !ok {
					first = time.Now()
					k.seen[string(j.UID)] = first
				}
				k.mu.Lock()
				start := time.Since(first) >= k.delay && !k.finishing[string(j.UID)]
				if start {
					k.finishing[string(j.UID)] = true
				}
				k.mu.Unlock()
				if start {
					wg.Go(func() {
						if !k.finish(ctx, j.DeepCopy()) {
							k.mu.Lock()
							delete(k.finishing, string(j.UID)) // retried next round
							k.mu.Unlock()
						}
					})
				}
			}
			k.mu.Lock()
			for s, n := range running {
				k.maxRun[s] = max(k.maxRun[s], n)
			}
			for node, n := range onNode {
				k.maxNode[node] = max(k.maxNode[node], n)
			}
			k.maxTotal = max(k.maxTotal, total)
			k.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// finish writes the status the Job controller would.
func (k *kubelet) finish(ctx context.Context, j *batchv1.Job) bool {
	now := metav1.Now()
	start := j.CreationTimestamp
	j.Status.StartTime = &start
	failed := k.fail != nil && k.fail(j)
	reason, msg := "PodFailurePolicy", "Container installer exited with 3 (rolled back)"
	if k.pod != nil {
		run := k.pod(ctx, j)
		if err := k.runPod(ctx, j, run); err != nil {
			return false
		}
		failed = run.ExitCode != 0
		if run.ExitCode != 3 && run.ExitCode != 4 {
			reason, msg = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
		} else {
			msg = fmt.Sprintf("Container installer for pod %s/%s failed with exit code %d matching FailJob rule at index 0", j.Namespace, j.Name, run.ExitCode)
		}
	}
	if failed {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now},
		}
	} else {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	if err := k.c.Status().Update(ctx, j); err != nil {
		return false
	}
	k.finished.Add(1)
	return true
}

func (k *kubelet) maxRunning(shim string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maxRun[shim]
}

func createNodes(t testing.TB, c client.Client, n int, labels map[string]string, prefix string) {
	t.Helper()
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", prefix, i), Labels: map[string]string{"kubernetes.io/arch": "amd64"}}}
		for k, v := range labels {
			node.Labels[k] = v
		}
		if err := c.Create(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}
}

// createNode creates a node with labels and the system info its kubelet
// would report (status.nodeInfo).
func createNode(t testing.TB, c client.Client, name string, labels map[string]string, info corev1.NodeSystemInfo) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.NodeInfo = info
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}

// linuxNode is the system info of a Linux node running containerd.
func linuxNode(arch string) corev1.NodeSystemInfo {
	return corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: arch, ContainerRuntimeVersion: "containerd://2.2.9"}
}

// waitFor polls until cond holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}

func getShim(t testing.TB, c client.Client, name string) *v1alpha1.Shim {
	t.Helper()
	s := &v1alpha1.Shim{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func condition(s *v1alpha1.Shim, t string) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == t {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

func ready(c client.Client, name string) func() (bool, string) {
	return func() (bool, string) {
		s := &v1alpha1.Shim{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, s); err != nil {
			return false, err.Error()
		}
		cond := condition(s, v1alpha1.ConditionReady)
		ok := cond != nil && cond.Status == metav1.ConditionTrue && s.Status.ObservedGeneration == s.Generation
		return ok, fmt.Sprintf("status %+v", s.Status)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("SHIMKIT_TEST_LOG") != "" {
		ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	code := m.Run()
	removeInstaller()
	os.Exit(code)
}
