package operator

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Starting the installer Jobs a decision asks for, each once the node gate
// admits it (package nodegate), and creating them.

// startNodes starts the decided installs and uninstalls, each once the
// node gate admits it; waiting: a node was held by another Shim's
// installer (or the cap), and is tried again soon.
func (r *jobStarter) startNodes(ctx context.Context, obs *observed, d fleet.Decision) (waiting bool, _ error) {
	g := r.group(ctx)
	for _, name := range d.Rollin.Start {
		v := d.ByName[name]
		reason := r.installReason(ctx, obs.Shim, v.Node, v.Installed(), v.Drifted)
		b, ok := r.batch.admitInstall(obs, v)
		if !ok {
			waiting = true
			continue
		}
		g.Go(func() error {
			err := r.startInstall(ctx, obs, v, b, reason)
			if err != nil {
				r.gate.Release(v.Node.Name, b.job)
			}
			return err
		})
	}
	for _, name := range d.Removal.Start {
		v := d.ByName[name]
		if !r.batch.admit(obs, v, jobview.OpUninstall) {
			waiting = true
			continue
		}
		g.Go(func() error { return r.batch.released(obs, v, jobview.OpUninstall, r.startUninstall(ctx, obs, v)) })
	}
	return waiting, g.Wait()
}

// installReason is the Normal Event reason of an install starting on the
// node: Installing, Upgrading, or Repairing a drifted node, which also gets
// a Warning Event Drifted saying what drifted.
func (r *jobStarter) installReason(ctx context.Context, shim *v1alpha1.Shim, node *corev1.Node, installed bool, drifted string) string {
	switch {
	case drifted != "":
		r.event(ctx, shim, node, corev1.EventTypeWarning, "Drifted", "Install", "node %s drifted (%s): installing the shim again", node.Name, drifted)
		r.metrics.DriftDetected(shim.Name, node.Name)
		return "Repairing"
	case installed:
		return "Upgrading"
	}
	return "Installing"
}

// startUninstall takes the node out of the RuntimeClass's selection, then
// starts its uninstall Job.
func (r *jobStarter) startUninstall(ctx context.Context, obs *observed, v *fleet.NodeView) error {
	if v.Label != "" && v.Label != fleet.LabelUninstalling {
		if err := nodelabel.SetState(ctx, r.client, v.Node.Name, obs.Shim.Name, fleet.LabelUninstalling); err != nil {
			return err
		}
		v.Label = fleet.LabelUninstalling
	}
	return r.startJob(ctx, obs, v, jobview.OpUninstall, "Uninstalling")
}

// startJob creates the node's Job. A finished Job of the same name (an
// earlier round of the same operation) is deleted first.
func (r *jobStarter) startJob(ctx context.Context, obs *observed, v *fleet.NodeView, op, reason string) error {
	hash := obs.Hash
	if op == jobview.OpUninstall {
		hash = v.SpecHash
	}
	p := v.Plan
	if p == nil || p.Operation != plan.Operation(op) {
		var err error
		if p, err = shimspec.Build(obs.Shim, v.Node, plan.Operation(op), r.opts.settings(), obs.Target()); err != nil {
			return err
		}
	}
	job, err := r.buildJob(obs.Shim, v.Node, p, hash)
	if err != nil {
		return err
	}
	created, err := r.createJob(ctx, obs, job, v.Node.Name)
	if err != nil || !created {
		return err
	}
	if op != jobview.OpVerify {
		v.Held = true // changing from now on, before the cache shows its Job
	}
	obs.Events.Add(reason, decide.OpAction(op), fmt.Sprintf("node %s (Job %s)", v.Node.Name, job.Name))
	return nil
}

// createJob creates the Job; false when one of its name exists: running
// (ours already, from before a restart, or not in the snapshot: created
// by an earlier reconcile), or finished, which is deleted (that Job, by
// its UID) to make room for the next reconcile.
func (r *jobStarter) createJob(ctx context.Context, obs *observed, job *batchv1.Job, node string) (bool, error) {
	err := r.client.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		i := slices.IndexFunc(obs.Jobs, func(j *batchv1.Job) bool { return j.Name == job.Name && j.Namespace == job.Namespace })
		if i < 0 {
			return false, nil
		}
		old := obs.Jobs[i]
		if ov := jobview.ViewOf(old); ov.Running() {
			return false, nil
		}
		// The node is free until the next reconcile creates the Job anew
		// (a held node counts as changing: it would wait for nodegate.Grace).
		r.gate.Release(node, job.Name)
		return false, client.IgnoreNotFound(r.client.Delete(ctx, old, client.Preconditions{UID: &old.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	}
	if err != nil {
		return false, fmt.Errorf("create Job %s for node %s: %w", job.Name, node, err)
	}
	return true, nil
}
