package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CRDDir is where the repository keeps its generated CRDs.
func CRDDir() string {
	return filepath.Join(RepoRoot(), "operator", "config", "crd", "bases")
}

// The Kubernetes releases the tests run, by their keys in
// hack/versions.env: envtest's kube-apiserver is the oldest release
// shimkit supports (the chart's kubeVersion), the real cluster's
// components are the newest.
const (
	KubeOldest = "KUBE_OLDEST_VERSION"
	KubeNewest = "KUBE_VERSION"
)

// KubeReleases are the releases the tests run, oldest first: what a test
// of admission (the CRD's rules, the chart's policies) runs on each.
func KubeReleases() []string { return []string{KubeOldest, KubeNewest} }

// Env is a running envtest control plane: a real kube-apiserver and etcd
// built by hack/bins.sh.
type Env struct {
	Environment *envtest.Environment
	Config      *rest.Config
	Client      client.Client
	Scheme      *runtime.Scheme
}

// StartEnv starts kube-apiserver and etcd with the repository's CRDs
// installed (when there are any) and stops them in t.Cleanup. addToScheme
// registers extra API types with the client's scheme.
func StartEnv(t testing.TB, addToScheme ...func(*runtime.Scheme) error) *Env {
	t.Helper()
	return StartEnvWith(t, nil, addToScheme...)
}

// StartEnvWith is StartEnv with a chance to configure the environment (the
// API server's flags, say) before it starts.
func StartEnvWith(t testing.TB, configure func(*envtest.Environment), addToScheme ...func(*runtime.Scheme) error) *Env {
	t.Helper()
	return StartEnvOf(t, KubeOldest, configure, addToScheme...)
}

// StartEnvOf is StartEnvWith on the kube-apiserver of a release the tests
// run (KubeOldest, KubeNewest).
func StartEnvOf(t testing.TB, release string, configure func(*envtest.Environment), addToScheme ...func(*runtime.Scheme) error) *Env {
	t.Helper()
	RequireHarness(t)
	env, err := startEnv(t, t.TempDir(), release, configure, addToScheme)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Environment.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	return env
}

// startEnv starts the release's kube-apiserver and etcd, their wrappers
// written into dir, and returns them with a client whose scheme has the
// client-go types and addToScheme's. Stopping them is the caller's.
func startEnv(t testing.TB, dir, release string, configure func(*envtest.Environment), addToScheme []func(*runtime.Scheme) error) (*Env, error) {
	t.Helper()
	kube := BinDir(t, "kube", release, "kube-apiserver")
	etcd := BinDir(t, "etcd", "ETCD_VERSION", "etcd")

	env := &envtest.Environment{
		BinaryAssetsDirectory: kube,
		ErrorIfCRDPathMissing: false,
		// envtest's 20 s: kube-apiserver took longer to come up while
		// the end-to-end cluster's nodes booted beside it (two cores).
		ControlPlaneStartTimeout: 90 * time.Second,
	}
	if _, err := os.Stat(CRDDir()); err == nil {
		env.CRDDirectoryPaths = []string{CRDDir()}
		env.ErrorIfCRDPathMissing = true
	}
	// envtest starts them in process groups of their own and stops them
	// in t.Cleanup, which a test binary ended by go test -timeout never
	// runs: they die with it instead.
	env.ControlPlane.GetAPIServer().Path = diesWithParent(t, dir, filepath.Join(kube, "kube-apiserver"))
	env.ControlPlane.Etcd = &envtest.Etcd{Path: diesWithParent(t, dir, filepath.Join(etcd, "etcd"))}
	if configure != nil {
		configure(env)
	}

	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (kube-apiserver %s, etcd %s): %w", kube, etcd, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: c, Scheme: scheme}, nil
}
