package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// offerInstalls tells the node gate what the decision offers
// (decide.Batch), and returns how long the Shim waits for the others to
// offer theirs before starting any (the gate's answer: it holds every
// Shim's offers).
func (r *batcher) offerInstalls(obs *observed, b decide.BatchOffer) time.Duration {
	return r.gate.Offer(jobview.LabelValue(obs.Shim.Name), b.Offer, b.Unsettled, time.Now())
}

// sharedNodes are the nodes that other Shims would install now (nil
// without batching): the planner prefers them, so that their installs
// share one Job.
func (r *batcher) sharedNodes(obs *observed) map[string]bool {
	if r.opts.BatchWindow < 0 {
		return nil
	}
	return r.gate.Wanted(jobview.LabelValue(obs.Shim.Name), time.Now())
}

// installStart is a node's install Job about to start: the Shim's own, or
// a batch carrying partners' plans too.
type installStart struct {
	job      string
	partners []*nodegate.Offer
	plans    []*plan.NodePlan // the partners'
}

// admitInstall takes along the Shims that offered the node (and fit one
// installer run with this one), then asks the node gate for the node;
// false: another Shim's installer runs there, or the cap is reached.
func (r *batcher) admitInstall(obs *observed, v *fleet.NodeView) (*installStart, bool) {
	now, leader := time.Now(), jobview.LabelValue(obs.Shim.Name)
	b := &installStart{job: jobview.JobName(obs.Shim.Name, v.Node.Name, jobview.OpInstall, obs.Hash)}
	if r.opts.BatchWindow >= 0 && v.Plan != nil && (v.Job == nil || !v.Job.Sibling()) {
		for _, o := range r.gate.Claim(v.Node.Name, leader, now) {
			p, ok := r.partnerPlan(obs, v, o, b.plans)
			if !ok {
				r.gate.Unclaim(v.Node.Name, o)
				continue
			}
			b.partners, b.plans = append(b.partners, o), append(b.plans, p)
		}
	}
	var members []string
	if len(b.partners) > 0 {
		ids := []string{obs.Hash}
		members = []string{leader}
		for _, o := range b.partners {
			ids = append(ids, o.Shim.Name, o.Hash)
			members = append(members, jobview.LabelValue(o.Shim.Name))
		}
		b.job = jobview.JobName(obs.Shim.Name, v.Node.Name, jobview.OpInstall, strings.Join(ids, "+"))
	}
	if !r.gate.Acquire(v.Node.Name, leader, b.job, members, now) {
		r.gate.Unclaim(v.Node.Name, b.partners...)
		return nil, false
	}
	return b, true
}

// partnerPlan builds the partner's plan for the node, if it fits the
// leader's installer run: the same credentials and trusted root to mount,
// and no handler of the same name as the leader's or an earlier
// partner's.
func (r *batcher) partnerPlan(obs *observed, v *fleet.NodeView, o *nodegate.Offer, earlier []*plan.NodePlan) (*plan.NodePlan, bool) {
	if shimspec.PullSecretName(o.Shim) != shimspec.PullSecretName(obs.Shim) || shimspec.TrustedRootRef(o.Shim) != shimspec.TrustedRootRef(obs.Shim) {
		return nil, false
	}
	p, err := shimspec.Build(o.Shim, v.Node, plan.OpInstall, r.opts.settings(), shimspec.Target{Hash: o.Hash, Art: o.Artifact})
	if err != nil {
		return nil, false
	}
	for _, other := range append([]*plan.NodePlan{v.Plan}, earlier...) {
		for _, h := range p.Handlers {
			if slices.ContainsFunc(other.Handlers, func(x plan.Handler) bool { return x.Name == h.Name }) {
				return nil, false
			}
		}
	}
	return p, true
}

// startInstall creates the node's install Job: the Shim's own, or the
// batch Job with its partners' plans.
func (r *jobStarter) startInstall(ctx context.Context, obs *observed, v *fleet.NodeView, b *installStart, reason string) error {
	if len(b.partners) == 0 {
		return r.startJob(ctx, obs, v, jobview.OpInstall, reason)
	}
	job, err := r.buildBatchJob(obs, v, b)
	if err != nil {
		return err
	}
	created, err := r.createJob(ctx, obs, job, v.Node.Name)
	if err != nil || !created {
		return err
	}
	v.Held = true
	names := make([]string, len(b.partners))
	for k, o := range b.partners {
		names[k] = o.Shim.Name
		why := r.installReason(ctx, o.Shim, v.Node, o.Installed[v.Node.Name], o.Drifted[v.Node.Name])
		r.event(ctx, o.Shim, v.Node, corev1.EventTypeNormal, why, "Install", "node %s: with Shim %s in one installer run, one containerd restart (Job %s)", v.Node.Name, obs.Shim.Name, job.Name)
	}
	obs.Events.Add(reason, "Install", fmt.Sprintf("node %s with Shims %s (Job %s)", v.Node.Name, strings.Join(names, ", "), job.Name))
	return nil
}

// buildBatchJob is the leader's Job for the node carrying every member's
// plan as a NodePlanList: the partners own it too (not as its
// controller), and its members annotation gives each member's spec hash
// and pinned digest.
func (r *jobStarter) buildBatchJob(obs *observed, v *fleet.NodeView, b *installStart) (*batchv1.Job, error) {
	job, err := r.buildJob(obs.Shim, v.Node, v.Plan, obs.Hash)
	if err != nil {
		return nil, err
	}
	plans := append([]*plan.NodePlan{v.Plan}, b.plans...)
	doc, err := plan.EncodeList(plan.NewList(plans...))
	if err != nil {
		return nil, fmt.Errorf("plans of Shims %s for node %s: %w", obs.Shim.Name, v.Node.Name, err)
	}
	members := []jobview.Member{{Shim: obs.Shim.Name, SpecHash: obs.Hash, Digest: digestOf(v.Plan), Canary: planCanary(obs.Shim, v.Plan)}}
	for k, o := range b.partners {
		members = append(members, jobview.Member{Shim: o.Shim.Name, SpecHash: o.Hash, Digest: digestOf(b.plans[k]), Canary: planCanary(o.Shim, b.plans[k])})
		job.OwnerReferences = append(job.OwnerReferences, metav1.OwnerReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Shim", Name: o.Shim.Name, UID: o.Shim.UID, BlockOwnerDeletion: ptr.To(true),
		})
	}
	raw, err := json.Marshal(members)
	if err != nil {
		return nil, err
	}
	job.Name = b.job
	job.Annotations[jobview.MembersAnnotation] = string(raw)
	delete(job.Annotations, jobview.AnnotationDigest)
	delete(job.Annotations, jobview.AnnotationCanary)
	job.Spec.Template.Annotations[PlanAnnotation] = string(doc)
	// The partners' images too (partners share the leader's pull secret).
	nodejob.WithImages(&job.Spec.Template.Spec, plans, r.jobSpecFor(obs.Shim, v.Node))
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

// admit asks the node gate for the node before its Job is started.
func (r *batcher) admit(obs *observed, v *fleet.NodeView, op string) bool {
	return r.gate.Acquire(v.Node.Name, jobview.LabelValue(obs.Shim.Name), jobview.JobName(obs.Shim.Name, v.Node.Name, op, obs.JobHash(v, op)), nil, time.Now())
}

// released gives the node back when its Job could not be started.
func (r *batcher) released(obs *observed, v *fleet.NodeView, op string, err error) error {
	if err != nil {
		r.gate.Release(v.Node.Name, jobview.JobName(obs.Shim.Name, v.Node.Name, op, obs.JobHash(v, op)))
	}
	return err
}
