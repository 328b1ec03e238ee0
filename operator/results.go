package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/nodelabel"
)

// labelControllerUID is set by the Job controller on a Job's pods.
const labelControllerUID = "batch.kubernetes.io/controller-uid"

// results remembers the NodeResults read from finished Jobs' pods, per
// Shim and Job, so that each Job's pods are read once (and its failure
// reported once), not on every reconcile.
type results struct {
	mu     sync.Mutex
	byShim map[string]map[types.UID]*plan.NodeResult // a nil result: read, none found
}

func (rs *results) get(shim string, job types.UID) (*plan.NodeResult, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	res, ok := rs.byShim[shim][job]
	return res, ok
}

func (rs *results) put(shim string, job types.UID, res *plan.NodeResult) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byShim == nil {
		rs.byShim = map[string]map[types.UID]*plan.NodeResult{}
	}
	if rs.byShim[shim] == nil {
		rs.byShim[shim] = map[types.UID]*plan.NodeResult{}
	}
	rs.byShim[shim][job] = res
}

// keep forgets the Shim's results of Jobs other than keep's.
func (rs *results) keep(shim string, keep map[types.UID]bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for uid := range rs.byShim[shim] {
		if !keep[uid] {
			delete(rs.byShim[shim], uid)
		}
	}
	if len(keep) == 0 {
		delete(rs.byShim, shim)
	}
}

// recordFinishedJobs reads the results of finished Jobs, reports failed
// ones, and turns succeeded ones into node labels: installed (at the Job's
// spec hash) or gone.
func (r *Reconciler) recordFinishedJobs(ctx context.Context, obs *observed) error {
	g := r.group(ctx)
	for i := range obs.views {
		v := &obs.views[i]
		if j := v.job; j != nil && (j.failed() || j.succeeded() && v.unrecorded()) {
			g.Go(func() error { return r.recordJob(ctx, obs, v) })
		}
		if v.unverified() {
			g.Go(func() error { return r.recordVerify(ctx, obs, v) })
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// Drift, once what finished is recorded: what the verifications found
	// is drift from now on; what the installs repaired is not.
	now := time.Now()
	for i := range obs.views {
		if at := obs.views[i].detectDrift(obs.shim, obs.hash, now); !at.IsZero() && (obs.driftCheck.IsZero() || at.Before(obs.driftCheck)) {
			obs.driftCheck = at
		}
	}
	return nil
}

// unrecorded: the node's labels do not yet say what its succeeded Job did.
func (v *nodeView) unrecorded() bool {
	if v.job.op == opInstall {
		return v.label != labelUninstalling && (v.label != nodelabel.Installed || v.specHash != v.job.specHash || v.repaired())
	}
	return v.label != ""
}

// repaired: the node's Job reinstalled the spec after a verification found
// it drifted (created since): Mark records the repair, and with it a clean
// verification.
func (v *nodeView) repaired() bool {
	f := v.verified
	return f != nil && len(f.Drift) > 0 && f.SpecHash == v.job.specHash && !v.job.job.CreationTimestamp.Time.Before(f.Time.Truncate(time.Second))
}

func (r *Reconciler) recordJob(ctx context.Context, obs *observed, v *nodeView) error {
	j := v.job
	if !j.resultRead {
		res, err := r.readResult(ctx, j.job, obs.shim.Name)
		if err != nil {
			// Not fatal: the Job's condition stands in, and a failed Job's
			// pods are read again next time.
			log.FromContext(ctx).Error(err, "reading the installer's result", "node", v.node.Name)
		} else {
			j.result, j.resultRead = res, true
			r.results.put(obs.shim.Name, j.job.UID, res)
		}
		if j.failed() && err == nil {
			reason, msg := j.failure()
			r.event(obs.shim, v.node, corev1.EventTypeWarning, action(j.op)+"Failed", action(j.op), "%s", failureNote(v.node.Name, reason, msg))
		}
	}
	switch {
	case j.sibling():
		obs.events.add("RetryAlone", "Install", fmt.Sprintf("node %s (Job %s: another Shim's plan failed; installing this one again, alone)", v.node.Name, j.job.Name))
		return nil
	case j.failed() && j.batch > 0 && !j.resultRead:
		// Whose plan failed is in the result: read again next time.
		return nil
	case j.failed():
		return r.recordFailure(ctx, obs, v)
	}
	switch j.op {
	case opInstall:
		if err := nodelabel.Mark(ctx, r.client, v.node.Name, obs.shim.Name, obs.shim.UID, j.specHash); err != nil {
			return err
		}
		v.label, v.specHash = nodelabel.Installed, j.specHash
		v.verified = &nodelabel.Verification{ShimUID: obs.shim.UID, SpecHash: j.specHash, Time: time.Now()} // as Mark wrote
		digest := ""
		if j.result != nil && j.result.Digest != "" {
			digest = ", " + j.result.Digest
		}
		obs.events.add("Installed", "Install", fmt.Sprintf("node %s (spec %s%s)", v.node.Name, j.specHash, digest))
	case opUninstall:
		if err := nodelabel.Unmark(ctx, r.client, v.node.Name, obs.shim.Name); err != nil {
			return err
		}
		v.label, v.specHash, v.verified, v.failure = "", "", nil, nil // as Unmark removed
		obs.events.add("Uninstalled", "Uninstall", "node "+v.node.Name)
	}
	return nil
}

// recordFailure writes the failed Job's reason on the node, once, so that
// the failure outlives the Job.
func (r *Reconciler) recordFailure(ctx context.Context, obs *observed, v *nodeView) error {
	j := v.job
	reason, msg := j.failure()
	canary := ""
	if reason == string(plan.ReasonCanaryFailed) {
		canary = j.canary
	}
	if f := v.failure; f != nil && f.Job == j.job.Name && f.Op == j.op && f.SpecHash == j.specHash && f.Reason == reason && f.Canary == canary {
		return nil
	}
	f := nodelabel.Failure{ShimUID: obs.shim.UID, Op: j.op, SpecHash: j.specHash, Reason: reason, Message: msg, Canary: canary, Job: j.job.Name, Time: time.Now().UTC().Truncate(time.Second)}
	if err := nodelabel.MarkFailed(ctx, r.client, v.node.Name, obs.shim.Name, f); err != nil {
		return err
	}
	v.failure = &f
	return nil
}

// readResult returns the shim's NodeResult that the installer wrote as the
// termination message of the Job's newest pod that has one (a batch Job's
// is a NodeResultList), or nil when none is readable (pods gone, killed
// before writing, an older installer).
func (r *Reconciler) readResult(ctx context.Context, job *batchv1.Job, shim string) (*plan.NodeResult, error) {
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{labelControllerUID: string(job.UID)}); err != nil {
		return nil, fmt.Errorf("pods of Job %s: %w", job.Name, err)
	}
	var best *plan.NodeResult
	var bestPod *corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		res := podResult(pod, shim)
		if res == nil || bestPod != nil && !newerPod(pod, bestPod) {
			continue
		}
		best, bestPod = res, pod
	}
	return best, nil
}

// podResult decodes the shim's result from the installer container's
// termination message.
func podResult(pod *corev1.Pod, shim string) *plan.NodeResult {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != installerContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil || t.Message == "" {
				continue
			}
			rs, err := plan.DecodeResults([]byte(t.Message))
			if err != nil {
				continue
			}
			for _, res := range rs {
				// One result is the Job's whole answer (a plan the
				// installer could not read names no Shim).
				if len(rs) == 1 || res.Shim.Name == shim {
					return res
				}
			}
		}
	}
	return nil
}

func newerPod(a, b *corev1.Pod) bool {
	return a.CreationTimestamp.After(b.CreationTimestamp.Time) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name > b.Name
}

// failureNote says why a node failed, for events and conditions:
// "node n1: ConfigInvalid: /etc/containerd/config.toml:12: ...".
func failureNote(node, reason, message string) string {
	if message == "" {
		return fmt.Sprintf("node %s: %s", node, reason)
	}
	return fmt.Sprintf("node %s: %s: %s", node, reason, message)
}
