package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// offer records the Shim's batch offer in the node gate (the plan's
// decide.BatchOffer), before any of its Jobs starts.
func (r *batcher) offer(obs *observed, b decide.BatchOffer) {
	r.gate.Offer(jobview.LabelValue(obs.Shim.Name), b.Offer, time.Now())
}

// startBatch creates the node's batch Job: the leader's plan with its
// partners'.
func (r *jobStarter) startBatch(ctx context.Context, run *acting, st decide.Start) error {
	obs, v := run.obs, st.View
	job, err := r.buildBatchJob(obs, v, st)
	if err != nil {
		return err
	}
	created, err := r.createJob(ctx, job, st.Replaces, v.Node.Name)
	if err != nil || !created {
		return err
	}
	return r.exec.act(ctx, run, st.After)
}

// buildBatchJob is the leader's Job for the node carrying every member's
// plan as a NodePlanList: the partners own it too (not as its
// controller), and its members annotation gives each member's spec hash
// and pinned digest.
func (r *jobStarter) buildBatchJob(obs *observed, v *decide.NodeView, st decide.Start) (*batchv1.Job, error) {
	job, err := r.buildJob(obs.Shim, v.Node, st.Plan, st.Hash, st.ImageWay)
	if err != nil {
		return nil, err
	}
	plans := []*plan.NodePlan{st.Plan}
	for _, p := range st.Partners {
		plans = append(plans, p.Plan)
	}
	doc, err := plan.EncodeList(plan.NewList(plans...))
	if err != nil {
		return nil, fmt.Errorf("plans of Shims %s for node %s: %w", obs.Shim.Name, v.Node.Name, err)
	}
	members := []jobview.Member{{Shim: obs.Shim.Name, SpecHash: obs.Hash, Digest: digestOf(st.Plan), Canary: planCanary(obs.Shim, st.Plan)}}
	for _, p := range st.Partners {
		o := p.Offer
		members = append(members, jobview.Member{Shim: o.Shim.Name, SpecHash: o.Hash, Digest: digestOf(p.Plan), Canary: planCanary(o.Shim, p.Plan)})
		job.OwnerReferences = append(job.OwnerReferences, metav1.OwnerReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Shim", Name: o.Shim.Name, UID: o.Shim.UID, BlockOwnerDeletion: ptr.To(true),
		})
	}
	raw, err := json.Marshal(members)
	if err != nil {
		return nil, err
	}
	job.Name = st.Reserve.Job
	job.Annotations[jobview.MembersAnnotation] = string(raw)
	delete(job.Annotations, jobview.AnnotationDigest)
	delete(job.Annotations, jobview.AnnotationCanary)
	job.Spec.Template.Annotations[PlanAnnotation] = string(doc)
	// The partners' images too (partners share the leader's pull secret).
	nodejob.WithImages(&job.Spec.Template.Spec, plans, r.jobSpecFor(obs.Shim, st.ImageWay))
	if slices.ContainsFunc(plans, func(p *plan.NodePlan) bool { return p.Canary != nil }) {
		job.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
	}
	return job, nil
}

// planCanary is the hash of the Shim's canary when the plan runs it ("":
// none).
func planCanary(shim *v1alpha1.Shim, p *plan.NodePlan) string {
	if p.Canary == nil {
		return ""
	}
	return nodeview.CanaryHash(shim)
}

// digestOf is the artifact digest the plan pins ("" without one).
func digestOf(p *plan.NodePlan) string {
	if p.Artifact == nil {
		return ""
	}
	return p.Artifact.Digest
}
