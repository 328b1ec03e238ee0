package operator

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/nodelabel"
)

// Verification: a node that has the Shim at its current spec is checked,
// every Options.VerifyPeriod, against what its install recorded, by a
// verifying installer Job (plan.OpVerify) that changes nothing: the
// installed files' digests, the handlers in containerd's config, the spec
// and the artifact. The finding is recorded on the node
// (nodelabel.Verification); a node that drifted is installed again under
// maxUpdate, like a node whose kubelet stopped reporting a handler
// (drift.go). The install itself counts as a verification (nodelabel.Mark),
// so a node is first verified a period after its install.
//
// Verifying Jobs hold their node in the node gate like any installer, and
// at most maxUpdate of a Shim's run at once; they start only once the
// rollout is done, and never count as nodes changing.

// verifyDue says when the node is next due for verification, and whether
// it is one to verify at all: it has the Shim at the current spec, has not
// drifted, and nothing runs on it.
func (v *nodeView) verifyDue(current string, period time.Duration) (time.Time, bool) {
	if !v.targeted() || v.label != nodelabel.Installed || v.specHash != current || v.drifted != "" || v.held ||
		v.job != nil && v.job.running() || v.verify != nil && v.verify.running() {
		return time.Time{}, false
	}
	var last time.Time
	if f := v.verified; f != nil && f.SpecHash == current {
		last = f.Time
	}
	return last.Add(period), true
}

// startVerifies starts verifying Jobs on the nodes that are due, the
// longest due first, as many as budget leaves beside the verifications
// running, and returns when to look again (zero: no node will be due).
func (r *Reconciler) startVerifies(ctx context.Context, obs *observed, budget int) (time.Time, error) {
	if r.opts.VerifyPeriod < 0 {
		return time.Time{}, nil
	}
	now := time.Now()
	var next time.Time
	later := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	running := 0
	type dueNode struct {
		v  *nodeView
		at time.Time
	}
	var due []dueNode
	for i := range obs.views {
		v := &obs.views[i]
		if v.verify != nil && v.verify.running() {
			running++
		}
		at, ok := v.verifyDue(obs.hash, r.opts.VerifyPeriod)
		switch {
		case !ok:
		case at.After(now):
			later(at)
		default:
			due = append(due, dueNode{v, at})
		}
	}
	slices.SortStableFunc(due, func(a, b dueNode) int { return a.at.Compare(b.at) })
	g := r.group(ctx)
	started := 0
	for _, d := range due {
		v := d.v
		if started >= budget-running {
			break // the next ones when these finish (their Jobs' events)
		}
		job := jobName(obs.shim.Name, v.node.Name, opVerify, obs.hash)
		if !r.gate.acquireVerify(v.node.Name, labelValue(obs.shim.Name), job, now) {
			later(now.Add(gateRetry)) // another Shim's installer runs there
			continue
		}
		started++
		g.Go(func() error {
			err := r.startJob(ctx, obs, v, opVerify, "Verifying")
			if err != nil {
				r.gate.release(v.node.Name, job)
			}
			return err
		})
	}
	return next, g.Wait()
}

// recordVerify records a finished verifying Job's finding on the node, and
// marks the node drifted when it found something.
func (r *Reconciler) recordVerify(ctx context.Context, obs *observed, v *nodeView) error {
	j := v.verify
	found := nodelabel.Verification{ShimUID: obs.shim.UID, SpecHash: j.specHash, Time: time.Now().UTC().Truncate(time.Second), Job: j.job.Name, JobUID: string(j.job.UID)}
	if done := j.job.Status.CompletionTime; done != nil {
		found.Time = done.UTC()
	}
	res, err := r.readResult(ctx, j.job, obs.shim.Name)
	if err != nil {
		return fmt.Errorf("verification of node %s: %w", v.node.Name, err)
	}
	j.result, j.resultRead = res, true
	r.results.put(obs.shim.Name, j.job.UID, res)
	if j.failed() {
		// Nothing found either way: looked at again a period later.
		reason, msg := j.failure()
		r.event(obs.shim, v.node, corev1.EventTypeWarning, "VerifyFailed", "Verify", "%s", failureNote(v.node.Name, reason, msg))
	} else if res != nil {
		found.Drift = res.Drift
	}
	if err := nodelabel.MarkVerified(ctx, r.client, v.node.Name, obs.shim.Name, found); err != nil {
		return err
	}
	v.verified = &found
	if len(found.Drift) == 0 {
		obs.events.add("Verified", "Verify", "node "+v.node.Name)
	}
	return nil
}

// unverified: the node's record does not yet say what its finished
// verifying Job found, nor anything newer (an install since).
func (v *nodeView) unverified() bool {
	j := v.verify
	if j == nil || j.running() {
		return false
	}
	f := v.verified
	if f == nil {
		return true
	}
	done := j.job.CreationTimestamp.Time
	if c := j.job.Status.CompletionTime; c != nil {
		done = c.Time
	}
	return f.JobUID != string(j.job.UID) && f.Time.Before(done.Truncate(time.Second))
}
