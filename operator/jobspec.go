package operator

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// PlanAnnotation is the annotation of the installer pod's template that
// carries its plan (nodejob.PlanAnnotation).
const PlanAnnotation = nodejob.PlanAnnotation

// buildJob returns the Job that carries out the plan on its node
// (nodejob.Build), labelled with the spec hash and annotated for the
// reconciler, owned by the Shim; an image reaches its installer the way
// the plan said (nodeview.ImageWay).
func (r *jobStarter) buildJob(shim *v1alpha1.Shim, node *corev1.Node, p *plan.NodePlan, hash, imageWay string) (*batchv1.Job, error) {
	op := string(p.Operation)
	s := r.jobSpecFor(shim, imageWay)
	s.Name = jobview.JobName(shim.Name, node.Name, op, hash)
	s.Labels = map[string]string{
		jobview.LabelManagedBy: jobview.ManagedBy, jobview.LabelShim: jobview.LabelValue(shim.Name), jobview.LabelNode: jobview.LabelValue(node.Name),
		jobview.LabelOp: op, jobview.LabelSpecHash: hash,
	}
	s.Annotations = map[string]string{jobview.AnnotationCreated: time.Now().UTC().Format(time.RFC3339Nano)}
	if m := record.Machine(node); m != "" {
		s.Annotations[jobview.AnnotationMachine] = m
	}
	if d := digestOf(p); d != "" {
		s.Annotations[jobview.AnnotationDigest] = d
	}
	if c := planCanary(shim, p); c != "" {
		s.Annotations[jobview.AnnotationCanary] = c
	}
	s.Owners = []metav1.OwnerReference{*metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim"))}
	job, err := nodejob.Build(p, s)
	if err != nil {
		return nil, fmt.Errorf("installer Job of Shim %s: %w", shim.Name, err)
	}
	return job, nil
}

// jobSpecFor is the Shim's jobSpec on a node: how its image, if it has
// one, reaches the installer there (imageWay).
func (r *jobStarter) jobSpecFor(shim *v1alpha1.Shim, imageWay string) nodejob.Spec {
	s := r.jobSpec(shim)
	s.ImageWay = imageWay
	return s
}

// jobSpec is what every installer Job of the Shim shares: the operator's
// options, the Shim's pull secret and the trusted root of its keyless
// verification.
func (r *jobStarter) jobSpec(shim *v1alpha1.Shim) nodejob.Spec {
	o := r.opts
	s := nodejob.Spec{
		Namespace: o.Namespace, Image: o.InstallerImage, ImagePullPolicy: corev1.PullPolicy(o.ImagePullPolicy),
		ServiceAccount: o.InstallerServiceAccount, HostRoot: o.HostRoot, HostPID: o.HostPID, BundleRoot: o.BundleRoot, LinkDir: o.LinkDir, Env: o.InstallerEnv,
		BackoffLimit: o.JobBackoffLimit, Deadline: o.JobDeadline, TTL: o.JobTTL, PullSecret: shimspec.PullSecretName(shim),
	}
	if v := shim.Spec.Verification; v != nil && v.Keyless != nil {
		ref := v.Keyless.TrustedRootRef
		s.TrustedRoot = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: shimspec.TrustedRootKey(ref)}
	}
	return s
}
