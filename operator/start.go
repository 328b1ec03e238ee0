package operator

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
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
// Verifying Jobs (decide.Plan.Verify) hold their node in the node gate like any installer, and
// at most maxUpdate of a Shim's run at once; they start only once the
// rollout is done, and never count as nodes changing.

// Starting the installer Jobs a plan asks for (decide.Start): each once
// the node gate commits the reservation the plan made on its view of the
// gate, and creating them.

// startNodes starts the plan's Jobs, each once the node gate commits its
// reservation; refused: the gate refused one (another Shim's installer
// took the node, or the partners' slots, after the snapshot), which the
// next reconcile plans again.
func (r *jobStarter) startNodes(ctx context.Context, run *acting, starts []decide.Start) (refused bool, _ error) {
	g := r.group(ctx)
	now := time.Now()
	for _, st := range starts {
		if !r.gate.Reserve(st.Reserve, now) {
			refused = true
			continue
		}
		g.Go(func() error {
			err := r.start(ctx, run, st)
			if err != nil {
				r.gate.Release(st.Reserve.Node, st.Reserve.Job)
			}
			return err
		})
	}
	return refused, g.Wait()
}

// start creates the Start's Job: what the plan says before it first (a
// drifted node's Warning), an uninstalled node out of the RuntimeClass's
// selection first, and a batch's Job with its partners' plans.
func (r *jobStarter) start(ctx context.Context, run *acting, st decide.Start) error {
	v := st.View
	if err := r.exec.act(ctx, run, st.Before); err != nil {
		return err
	}
	if st.Unlabel {
		if err := nodelabel.SetState(ctx, r.client, v.Node.Name, run.obs.Shim.Name, v.Label, decide.LabelUninstalling,
			nodelabel.WithSchedulingLabel(run.obs.Shim.Spec.SchedulingLabel)); err != nil {
			return err
		}
	}
	if len(st.Partners) > 0 {
		return r.startBatch(ctx, run, st)
	}
	return r.startJob(ctx, run, st)
}

// startJob creates the node's Job of the Start, alone. A finished Job of
// the same name (an earlier round of the same operation) is deleted
// first.
func (r *jobStarter) startJob(ctx context.Context, run *acting, st decide.Start) error {
	v := st.View
	job, err := r.buildJob(run.obs.Shim, v.Node, st.Plan, st.Hash, st.ImageWay)
	if err != nil {
		return err
	}
	created, err := r.createJob(ctx, job, st.Replaces, v.Node.Name)
	if err != nil || !created {
		return err
	}
	return r.exec.act(ctx, run, st.After)
}

// createJob creates the Job, after deleting the finished Job of its
// name the plan found (replaces: that Job, by its UID); false when one of
// its name exists: running (ours already, from before a restart, or
// created by an earlier reconcile), or the one replaced, not gone yet:
// then the node is free until the next reconcile creates the Job (a held
// node counts as changing: it would wait for nodegate.Grace).
func (r *jobStarter) createJob(ctx context.Context, job, replaces *batchv1.Job, node string) (bool, error) {
	if replaces != nil {
		err := r.client.Delete(ctx, replaces, client.Preconditions{UID: &replaces.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("delete finished Job %s of node %s: %w", replaces.Name, node, err)
		}
	}
	err := r.client.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		if replaces != nil {
			r.gate.Release(node, job.Name)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create Job %s for node %s: %w", job.Name, node, err)
	}
	return true, nil
}
