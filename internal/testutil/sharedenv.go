package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SharedEnv is one envtest control plane for the tests of a package, in
// place of one each: starting kube-apiserver and etcd took 12 s of a
// test's 14 on two cores, and the operator's tests started 51.
//
// The first test that asks starts it; each test has it alone (one that
// asks while another holds it fails, naming the holder: tests sharing it
// run one at a time) and, when it ends, gets back what it found: every object
// it left (any resource the API server lists, its finalizers cleared,
// namespaces finalized) is deleted before the next test may start.
// kube-system, and what was there when Prepare was done, stay. A
// package's TestMain calls Stop after m.Run.
//
// A test that needs a differently configured server (flags, other CRDs)
// starts its own with StartEnvWith.
type SharedEnv struct {
	// AddToScheme registers API types with the client's scheme.
	AddToScheme []func(*runtime.Scheme) error
	// Prepare runs once the server is up, before the objects to keep
	// are recorded (the namespaces every test expects, say).
	Prepare func(ctx context.Context, c client.Client) error

	once   sync.Once
	inUse  sync.Mutex
	holder atomic.Pointer[string] // the name of the test that holds it
	env    *Env
	err    error
	dir    string
	reset  *resetter
}

// Env returns the running control plane for t, starting it on the first
// call, and has t's objects deleted when t ends. Only one test at a time
// holds it.
func (s *SharedEnv) Env(t testing.TB) *Env {
	t.Helper()
	RequireHarness(t)
	if !s.inUse.TryLock() {
		holder := "another test"
		if h := s.holder.Load(); h != nil {
			holder = *h
		}
		t.Fatalf("the shared control plane is held by %s: its tests run one at a time, and each asks once", holder)
	}
	name := t.Name()
	s.holder.Store(&name)
	s.once.Do(func() { s.err = s.start(t) })
	if s.err != nil {
		s.inUse.Unlock()
		t.Fatalf("the shared control plane: %v", s.err)
	}
	t.Cleanup(func() {
		defer s.inUse.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.reset.run(ctx); err != nil {
			t.Errorf("reset the shared control plane after %s: %v", t.Name(), err)
		}
	})
	return s.env
}

// start starts the control plane, runs Prepare and records what stays.
func (s *SharedEnv) start(t testing.TB) error {
	dir, err := os.MkdirTemp("", "shimkit-sharedenv-")
	if err != nil {
		return err
	}
	s.dir = dir
	env, err := startEnv(t, dir, KubeOldest, nil, s.AddToScheme)
	if err != nil {
		return err
	}
	s.env = env
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.Prepare != nil {
		if err := s.Prepare(ctx, env.Client); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	s.reset, err = newResetter(env)
	if err != nil {
		return err
	}
	return s.reset.record(ctx)
}

// Stop stops the control plane, if a test started it.
func (s *SharedEnv) Stop() error {
	var err error
	if s.env != nil {
		err = s.env.Environment.Stop()
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// resetter deletes what tests left on an API server.
type resetter struct {
	disc discovery.DiscoveryInterface
	dyn  dynamic.Interface
	kube kubernetes.Interface
	keep map[types.UID]bool
}

func newResetter(env *Env) (*resetter, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rest.NoWarnings{} // the deprecated kinds it lists
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &resetter{disc: kube.Discovery(), dyn: dyn, kube: kube, keep: map[types.UID]bool{}}, nil
}

// record keeps every object there now.
func (r *resetter) record(ctx context.Context) error {
	kinds, err := r.resources()
	if err != nil {
		return err
	}
	return r.each(ctx, kinds, func(_ schema.GroupVersionResource, o metav1.Object) error {
		r.keep[o.GetUID()] = true
		return nil
	})
}

// run deletes every object not recorded, and waits until they are gone.
// It asks the server for its resources once: a test may have added a CRD.
func (r *resetter) run(ctx context.Context) error {
	kinds, err := r.resources()
	if err != nil {
		return err
	}
	for {
		var left []string
		err := r.each(ctx, kinds, func(gvr schema.GroupVersionResource, o metav1.Object) error {
			if r.keep[o.GetUID()] || o.GetNamespace() == metav1.NamespaceSystem {
				return nil
			}
			left = append(left, gvr.Resource+" "+strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"))
			return r.remove(ctx, gvr, o)
		})
		if err != nil || len(left) == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			slices.Sort(left)
			return fmt.Errorf("%w; still there: %s", ctx.Err(), strings.Join(left, ", "))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// remove clears o's finalizers and deletes it at once; a namespace is
// finalized too, as no namespace controller runs.
func (r *resetter) remove(ctx context.Context, gvr schema.GroupVersionResource, o metav1.Object) error {
	res := r.dyn.Resource(gvr).Namespace(o.GetNamespace())
	if len(o.GetFinalizers()) > 0 {
		_, err := res.Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if ignoreGone(err) != nil {
			return fmt.Errorf("clear the finalizers of %s %s: %w", gvr.Resource, o.GetName(), err)
		}
	}
	if gvr.Group == "" && gvr.Resource == "namespaces" {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}
		_, err := r.kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		if ignoreGone(err) != nil {
			return fmt.Errorf("finalize namespace %s: %w", o.GetName(), err)
		}
	}
	err := res.Delete(ctx, o.GetName(), metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), PropagationPolicy: new(metav1.DeletePropagationBackground)})
	if ignoreGone(err) != nil {
		return fmt.Errorf("delete %s %s: %w", gvr.Resource, o.GetName(), err)
	}
	return nil
}

// ignoreGone is err, but nil for an object already gone or going.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// each calls f with every object of the resources kinds.
func (r *resetter) each(ctx context.Context, kinds []schema.GroupVersionResource, f func(schema.GroupVersionResource, metav1.Object) error) error {
	for _, gvr := range kinds {
		list, err := r.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			continue // a CRD deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", gvr, err)
		}
		for i := range list.Items {
			if err := f(gvr, &list.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// resources lists what the server lists and deletes, but its own API
// registrations and flow control.
func (r *resetter) resources() ([]schema.GroupVersionResource, error) {
	lists, err := r.disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover the resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		if gv.Group == "apiregistration.k8s.io" || gv.Group == "flowcontrol.apiserver.k8s.io" {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") || !slices.Contains(res.Verbs, "delete") {
				continue
			}
			out = append(out, gv.WithResource(res.Name))
		}
	}
	return out, nil
}
