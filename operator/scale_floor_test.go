package operator_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
)

// BenchmarkScaleFloor1000Nodes is the floor under BenchmarkScale1000Nodes
// on this machine: the same API server, nodes, stand-in kubelet and Jobs,
// but instead of the operator a loop that does only the two writes a node
// needs, each as soon as it can: the moment a Job completes (its watch
// event), its node's label and the next node's Job, no reads, no status,
// no reconcile queue. What the operator takes beyond this is its own.
//
//	go test ./operator -run '^$' -bench ScaleFloor -benchtime 1x -v
func BenchmarkScaleFloor1000Nodes(b *testing.B) {
	for _, d := range []time.Duration{time.Second, 5 * time.Second} {
		b.Run(fmt.Sprintf("D=%v", d), func(b *testing.B) { scaleFloor(b, 1000, d) })
	}
}

func scaleFloor(b *testing.B, nodes int, d time.Duration) (last time.Duration) {
	ctx := context.Background()
	env := startCluster(b)
	createNodes(b, env.Client, nodes, map[string]string{"wasm": "true"}, "node")
	startKubelet(b, env, d, nil)
	shim := newShim("spin", "spin", "10%", map[string]string{"wasm": "true"})
	if err := env.Client.Create(ctx, shim); err != nil {
		b.Fatal(err)
	}
	var list corev1.NodeList
	if err := env.Client.List(ctx, &list); err != nil {
		b.Fatal(err)
	}
	jobs := make([]*batchv1.Job, len(list.Items))
	for i := range list.Items {
		j, err := operator.InstallJob(shim, &list.Items[i], operator.Options{InstallerImage: "shimkit-installer:bench", Namespace: jobNamespace})
		if err != nil {
			b.Fatal(err)
		}
		jobs[i] = j
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0 // as the operator's default: no client-side limit
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	watch, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{jobNamespace: {}}})
	if err != nil {
		b.Fatal(err)
	}

	for b.Loop() {
		var next, labelled atomic.Int64
		var once sync.Map // Job name → its completion handled
		done := make(chan struct{})
		fail := func(err error) { b.Error(err) }
		start := func() {
			if i := next.Add(1) - 1; i < int64(len(jobs)) {
				if err := c.Create(ctx, jobs[i].DeepCopy()); err != nil {
					fail(err)
				}
			}
		}
		completed := func(obj any) {
			j, ok := obj.(*batchv1.Job)
			if !ok || !complete(j) {
				return
			}
			if _, seen := once.LoadOrStore(j.Name, true); seen {
				return
			}
			go func() {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); start() }()
				if err := nodelabel.Mark(ctx, c, j.Spec.Template.Spec.NodeName, "spin", j.OwnerReferences[0].UID, "h"); err != nil {
					fail(err)
				}
				wg.Wait()
				if labelled.Add(1) == int64(len(jobs)) {
					close(done)
				}
			}()
		}
		wctx, cancel := context.WithCancel(ctx)
		informer, err := watch.GetInformer(wctx, &batchv1.Job{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) { completed(obj) },
		}); err != nil {
			b.Fatal(err)
		}
		go func() { _ = watch.Start(wctx) }()
		watch.WaitForCacheSync(wctx)
		plane0 := controlPlaneCPU()
		t0 := time.Now()
		var wg sync.WaitGroup
		for range len(jobs) / 10 {
			wg.Add(1)
			go func() { defer wg.Done(); start() }()
		}
		wg.Wait()
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			b.Fatalf("%d of %d nodes labelled after 10 minutes", labelled.Load(), len(jobs))
		}
		wall := time.Since(t0)
		last = wall
		plane1 := controlPlaneCPU()
		cancel()
		ideal := 10 * d
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(wall.Seconds()/ideal.Seconds(), "wall/ideal")
		b.ReportMetric((plane1["kube-apiserver"] - plane0["kube-apiserver"]).Seconds(), "apiserver-CPU-s")
		b.Logf("floor, %d nodes, maxUpdate 10%%, D=%v: every node labelled after %v (ideal %v), kube-apiserver CPU %v, etcd CPU %v",
			len(jobs), d, wall.Round(time.Millisecond), ideal, plane1["kube-apiserver"]-plane0["kube-apiserver"], plane1["etcd"]-plane0["etcd"])
	}
	return last
}

func complete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
