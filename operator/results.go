package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/nodelabel/record"
	"github.com/shimkit/shimkit/operator/fleet"
	"github.com/shimkit/shimkit/operator/jobview"
	"github.com/shimkit/shimkit/operator/nodejob"
)

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
		if j := v.Job; j != nil && (j.Failed() || j.Succeeded() && v.Unrecorded()) {
			g.Go(func() error { return r.recordJob(ctx, obs, v) })
		}
		if v.Unverified() {
			g.Go(func() error {
				if err := r.recordVerify(ctx, obs, v); err != nil {
					return err
				}
				r.metrics.jobFinished(obs.shim.Name, v.Verify)
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// Drift, once what finished is recorded: what the verifications found
	// is drift from now on; what the installs repaired is not.
	now := time.Now()
	for i := range obs.views {
		if at := obs.views[i].DetectDrift(obs.shim, obs.hash, now); !at.IsZero() && (obs.driftCheck.IsZero() || at.Before(obs.driftCheck)) {
			obs.driftCheck = at
		}
	}
	return nil
}

func (r *Reconciler) recordJob(ctx context.Context, obs *observed, v *fleet.NodeView) error {
	j := v.Job
	if !j.ResultRead {
		res, err := r.resultOf(ctx, j.Object, obs.shim.Name)
		if err != nil {
			// Not fatal: the Job's condition stands in, and a failed Job's
			// pods are read again next time.
			log.FromContext(ctx).Error(err, "reading the installer's result", "node", v.Node.Name)
		} else {
			j.Result, j.ResultRead = res, true
			r.results.put(obs.shim.Name, j.Object.UID, res)
		}
		if j.Failed() && err == nil {
			reason, msg := j.Failure()
			r.event(obs.shim, v.Node, corev1.EventTypeWarning, action(j.Op)+"Failed", action(j.Op), "%s", failureNote(v.Node.Name, reason, msg))
		}
	}
	switch {
	case j.Sibling():
		obs.events.add("RetryAlone", "Install", fmt.Sprintf("node %s (Job %s: another Shim's plan failed; installing this one again, alone)", v.Node.Name, j.Object.Name))
		return nil
	case j.Failed() && j.Batch > 0 && !j.ResultRead:
		// Whose plan failed is in the result: read again next time.
		return nil
	case j.Failed():
		return r.recordFailure(ctx, obs, v)
	}
	switch j.Op {
	case jobview.OpInstall:
		if err := nodelabel.MarkOn(ctx, r.client, v.Node, obs.shim.Name, obs.shim.UID, j.SpecHash); err != nil {
			return err
		}
		v.Label, v.SpecHash = nodelabel.Installed, j.SpecHash
		v.Verified = &nodelabel.Verification{ShimUID: obs.shim.UID, SpecHash: j.SpecHash, Time: time.Now(), Machine: record.Machine(v.Node)} // as MarkOn wrote
		digest := ""
		if j.Result != nil && j.Result.Digest != "" {
			digest = ", " + j.Result.Digest
		}
		obs.events.add("Installed", "Install", fmt.Sprintf("node %s (spec %s%s)", v.Node.Name, j.SpecHash, digest))
	case jobview.OpUninstall:
		if err := nodelabel.Unmark(ctx, r.client, v.Node.Name, obs.shim.Name); err != nil {
			return err
		}
		v.Label, v.SpecHash, v.Verified, v.Failure = "", "", nil, nil // as Unmark removed
		obs.events.add("Uninstalled", "Uninstall", "node "+v.Node.Name)
	}
	r.metrics.jobFinished(obs.shim.Name, j)
	return nil
}

// recordFailure writes the failed Job's reason on the node, once, so that
// the failure outlives the Job.
func (r *Reconciler) recordFailure(ctx context.Context, obs *observed, v *fleet.NodeView) error {
	j := v.Job
	reason, msg := j.Failure()
	canary := ""
	if reason == string(plan.ReasonCanaryFailed) {
		canary = j.Canary
	}
	if f := v.Failure; f != nil && f.Job == j.Object.Name && f.Op == j.Op && f.SpecHash == j.SpecHash && f.Reason == reason && f.Canary == canary {
		return nil
	}
	f := nodelabel.Failure{ShimUID: obs.shim.UID, Op: j.Op, SpecHash: j.SpecHash, Reason: reason, Message: msg, Canary: canary, Job: j.Object.Name, Time: time.Now().UTC().Truncate(time.Second), Machine: record.Machine(v.Node)}
	if err := nodelabel.MarkFailed(ctx, r.client, v.Node.Name, obs.shim.Name, f); err != nil {
		return err
	}
	v.Failure = &f
	r.metrics.jobFinished(obs.shim.Name, j)
	return nil
}

// readResult returns the shim's NodeResult that the installer wrote as the
// termination message of the Job's newest pod that has one
// (nodejob.ResultOf), or nil when none is readable.
func (r *Reconciler) readResult(ctx context.Context, job *batchv1.Job, shim string) (*plan.NodeResult, error) {
	pods, err := nodejob.Pods(ctx, r.reader, job)
	if err != nil {
		return nil, err
	}
	return nodejob.JobResult(job, pods, shim), nil
}

// failureNote says why a node failed, for events and conditions:
// "node n1: ConfigInvalid: /etc/containerd/config.toml:12: ...".
func failureNote(node, reason, message string) string {
	if message == "" {
		return fmt.Sprintf("node %s: %s", node, reason)
	}
	return fmt.Sprintf("node %s: %s: %s", node, reason, message)
}
