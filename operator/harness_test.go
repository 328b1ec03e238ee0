package operator_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const jobNamespace = "shimkit-system"

// cluster is the API server the package's tests share, one at a time:
// with the Shim CRD and the Jobs' namespace, each test's objects deleted
// when it ends.
var cluster = &testutil.SharedEnv{
	AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme},
	Prepare: func(ctx context.Context, c client.Client) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobNamespace}})
	},
}

// startCluster returns the package's API server for t alone.
func startCluster(t testing.TB) *testutil.Env {
	t.Helper()
	return cluster.Env(t)
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
	return startOperatorThrough(t, env, cfg, mutate, nil)
}

// startOperatorThrough runs the operator with its manager's client
// wrapped by wrap (nil: as it is).
func startOperatorThrough(t testing.TB, env *testutil.Env, cfg *rest.Config, mutate func(*operator.Options), wrap func(client.Client) client.Client) (stop func()) {
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
	opts := operator.Options{InstallerImage: "shimkit-installer:test", Namespace: jobNamespace, ResyncPeriod: 2 * time.Second,
		// Shims created together in a test are in the cache within this.
		BatchWindow: 500 * time.Millisecond,
		// Nodes a test labels by hand have no verification yet: they would
		// be verified at once (TestVerifyRepairsChangedFiles sets its own).
		VerifyPeriod: -1,
		// Every reconcile reads, decides, then writes (operator/phase).
		PhaseReport: func(err error) { t.Errorf("reconcile out of phase: %v", err) }}
	if mutate != nil {
		mutate(&opts)
	}
	c := mgr.GetClient()
	if wrap != nil {
		c = wrap(c)
	}
	r, err := operator.New(c, mgr.GetEventRecorder("shimkit"), opts)
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
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the shared API server: %v\n", err)
		code = 1
	}
	testutil.RemoveInstallerBinary()
	os.Exit(code)
}
