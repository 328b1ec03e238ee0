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

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator"
)

// kubelet stands in for the nodes: after a delay it marks each Job of the
// namespace succeeded, or failed when fail says so. It records how many
// Jobs of each shim ran at once. With pod set (startPodKubelet), each Job
// gets a pod that ends as pod says, with its exit code and termination
// message, and the Job ends as the Job controller would end it.
//
// It is driven by the Jobs' watch events, as a kubelet is by its pods':
// a Job is finished delay after its first event, not at the next poll, so
// that a benchmark measures the operator, not the stand-in.
type kubelet struct {
	c      client.Client
	reader client.Reader
	delay  time.Duration
	fail   func(job *batchv1.Job) bool
	pod    func(ctx context.Context, job *batchv1.Job) testutil.PodRun

	mu       sync.Mutex
	wg       sync.WaitGroup
	stopped  bool
	running  map[string]runningJob // unfinished Jobs by UID
	maxRun   map[string]int
	maxNode  map[string]int       // most Jobs (of any Shim) running at once on a node
	maxTotal int                  // most Jobs running at once
	seen     map[string]time.Time // when each Job was first seen (creation timestamps have 1s granularity)
	logs     map[string][]byte    // what each Job's pod wrote, by the Job's UID
	finished atomic.Int64
}

var _ operator.JobLogs = (*kubelet)(nil)

// JobLog serves what the Job's pod wrote, as the kubelet serves a
// container's log (the whole of it: the runs here are short).
func (k *kubelet) JobLog(_ context.Context, j *batchv1.Job) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	log, ok := k.logs[string(j.UID)]
	if !ok {
		return nil, fmt.Errorf("Job %s: no pod has run", j.Name)
	}
	return log, nil
}

// runningJob is what the counts need of an unfinished Job.
type runningJob struct{ shim, node string }

func startKubelet(t testing.TB, env *testutil.Env, delay time.Duration, fail func(*batchv1.Job) bool) *kubelet {
	t.Helper()
	return startKubeletWith(t, env, &kubelet{delay: delay, fail: fail})
}

// startPodKubelet starts a kubelet that runs each Job's pod with run.
func startPodKubelet(t testing.TB, env *testutil.Env, delay time.Duration, run func(context.Context, *batchv1.Job) testutil.PodRun) *kubelet {
	t.Helper()
	return startKubeletWith(t, env, &kubelet{delay: delay, pod: run})
}

func startKubeletWith(t testing.TB, env *testutil.Env, k *kubelet) *kubelet {
	t.Helper()
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
	k.c, k.reader = c, jobs
	k.running, k.maxRun, k.maxNode, k.seen = map[string]runningJob{}, map[string]int{}, map[string]int{}, map[string]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	informer, err := jobs.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.observe(ctx, obj) },
		DeleteFunc: func(obj any) { k.gone(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = jobs.Start(ctx); close(done) }()
	if !jobs.WaitForCacheSync(ctx) {
		t.Fatal("job cache did not sync")
	}
	t.Cleanup(func() {
		cancel()
		<-done
		k.mu.Lock()
		k.stopped = true
		k.mu.Unlock()
		k.wg.Wait()
	})
	return k
}

// observe counts an unfinished Job as running and, the first time, has it
// finished delay later; a finished or deleted one no longer runs.
func (k *kubelet) observe(ctx context.Context, obj any) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	uid := string(j.UID)
	k.mu.Lock()
	defer k.mu.Unlock()
	if finished(j) || j.DeletionTimestamp != nil {
		delete(k.running, uid)
		return
	}
	k.running[uid] = runningJob{shim: j.Labels["shim.containerd.x-k8s.io/shim"], node: j.Spec.Template.Spec.NodeName}
	k.count()
	if _, ok := k.seen[uid]; ok || k.stopped {
		return
	}
	k.seen[uid] = time.Now()
	key := client.ObjectKeyFromObject(j)
	k.wg.Go(func() { k.finishAfter(ctx, key, uid) })
}

func (k *kubelet) gone(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if j, ok := obj.(*batchv1.Job); ok {
		k.mu.Lock()
		delete(k.running, string(j.UID))
		k.mu.Unlock()
	}
}

// count updates the most Jobs seen running at once (k.mu held).
func (k *kubelet) count() {
	perShim, perNode := map[string]int{}, map[string]int{}
	for _, r := range k.running {
		perShim[r.shim]++
		perNode[r.node]++
	}
	for s, n := range perShim {
		k.maxRun[s] = max(k.maxRun[s], n)
	}
	for node, n := range perNode {
		k.maxNode[node] = max(k.maxNode[node], n)
	}
	k.maxTotal = max(k.maxTotal, len(k.running))
}

// finishAfter waits out the delay, then finishes the Job as the cache has
// it now, again after a conflict, until it is finished, gone or the
// kubelet stops.
func (k *kubelet) finishAfter(ctx context.Context, key client.ObjectKey, uid string) {
	wait := k.delay
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = 20 * time.Millisecond
		var j batchv1.Job
		if err := k.reader.Get(ctx, key, &j); err != nil || string(j.UID) != uid || finished(&j) || j.DeletionTimestamp != nil {
			return // gone, replaced or finished
		}
		if k.finish(ctx, &j) {
			return
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

// finish writes the status the Job controller would, after the pod the
// kubelet would run (k.pod), or with k.fail's verdict (a rollback).
func (k *kubelet) finish(ctx context.Context, j *batchv1.Job) bool {
	code := int32(0)
	if k.fail != nil && k.fail(j) {
		code = plan.ExitRolledBack
	}
	if k.pod != nil {
		run := k.pod(ctx, j)
		k.mu.Lock()
		if k.logs == nil {
			k.logs = map[string][]byte{}
		}
		k.logs[string(j.UID)] = run.Log
		k.mu.Unlock()
		if err := testutil.CreateJobPod(ctx, k.c, j, run); err != nil {
			return false
		}
		code = run.ExitCode
	}
	testutil.EndJob(j, code)
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
