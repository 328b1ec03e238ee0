package operator

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
)

// Operations a Job runs.
const (
	opInstall   = "install"
	opUninstall = "uninstall"
	// opVerify checks a node against what its install recorded, changing
	// nothing (nodeverify.go).
	opVerify = "verify"
)

// Labels on the Jobs, their pods and the RuntimeClasses. The values of
// labelShim and labelNode are the names, hashed when too long
// (labelValue); the Job's pod spec has the node's whole name.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "shimkit"
	labelShim      = "shim.containerd.x-k8s.io/shim"
	labelNode      = "shim.containerd.x-k8s.io/node"
	labelOp        = "shim.containerd.x-k8s.io/op"
	labelSpecHash  = "shim.containerd.x-k8s.io/spec-hash"
	// annotationDigest on an install Job is the artifact digest its plan
	// pins: the node is up to date only when its installer reports it.
	annotationDigest = "shim.containerd.x-k8s.io/digest"
	// annotationCreated is when the operator created the Job, in
	// nanoseconds (newer).
	annotationCreated = "shim.containerd.x-k8s.io/created"
	// annotationCanary on an install Job is the hash of the canary it runs
	// (canaryHash): a node whose canary failed is tried again when the
	// canary changes.
	annotationCanary = "shim.containerd.x-k8s.io/canary"
)

// jobView is what the reconciler reads from a Job.
type jobView struct {
	job      *batchv1.Job
	op       string
	specHash string
	digest   string // the pinned digest (annotationDigest)
	canary   string // the canary's hash (annotationCanary)
	// result is the installer's NodeResult, once read from a finished
	// Job's pod (resultRead: read, even when none was found).
	result     *plan.NodeResult
	resultRead bool
	// batch is how many Shims' plans the Job carries (0: one, its own).
	batch int
}

func viewJob(j *batchv1.Job) *jobView {
	return &jobView{job: j, op: j.Labels[labelOp], specHash: j.Labels[labelSpecHash], digest: j.Annotations[annotationDigest], canary: j.Annotations[annotationCanary]}
}

func (v *jobView) condition(t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range v.job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &v.job.Status.Conditions[i]
		}
	}
	return nil
}

// succeeded: the Job completed, and its installer installed the pinned
// digest (when it reported one); or, a batch Job that failed, its
// installer reports this Shim's plan committed before another's failed.
func (v *jobView) succeeded() bool {
	switch {
	case v.condition(batchv1.JobComplete) != nil:
		return !v.wrongDigest()
	case v.batch > 0 && v.condition(batchv1.JobFailed) != nil:
		return v.result != nil && v.result.Outcome == plan.Succeeded && !v.wrongDigest()
	}
	return false
}

// failed: the Job failed (for this Shim's plan), or completed with another
// digest than the pinned one.
func (v *jobView) failed() bool {
	return (v.condition(batchv1.JobFailed) != nil || v.condition(batchv1.JobComplete) != nil) && !v.succeeded()
}

// sibling: this Shim's plan of a batch Job was undone because another
// Shim's failed (plan.ReasonSiblingFailed): no failure of its own, and the
// node is installed again, alone.
func (v *jobView) sibling() bool {
	return v.batch > 0 && v.failed() && v.result != nil && v.result.Reason == plan.ReasonSiblingFailed
}

// wrongDigest: the installer reports having installed another artifact
// than the plan pinned.
func (v *jobView) wrongDigest() bool {
	r := v.result
	return v.op == opInstall && v.digest != "" && r != nil && r.Outcome == plan.Succeeded && r.Digest != v.digest
}
func (v *jobView) running() bool {
	return !v.succeeded() && !v.failed() && v.job.DeletionTimestamp == nil
}

// failure explains a failed Job: the installer's reason and message, or
// the Job's condition when the installer left no result.
func (v *jobView) failure() (reason, message string) {
	if v.wrongDigest() {
		return string(plan.ReasonDigestMismatch), fmt.Sprintf("installed %s, the rollout pins %s", v.result.Digest, v.digest)
	}
	if r := v.result; r != nil && r.Outcome != plan.Succeeded {
		if r.Reason == "" {
			return string(r.Outcome), r.Message
		}
		return string(r.Reason), r.Message
	}
	c := v.condition(batchv1.JobFailed)
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// newer reports whether a is a later Job than b for the same node: by the
// operator's creation time in nanoseconds (annotationCreated; Jobs of a
// fast rollout are often created within the same second, the resolution
// of creationTimestamp), then creationTimestamp, then name.
func newer(a, b *batchv1.Job) bool {
	if b == nil {
		return true
	}
	ta, errA := time.Parse(time.RFC3339Nano, a.Annotations[annotationCreated])
	tb, errB := time.Parse(time.RFC3339Nano, b.Annotations[annotationCreated])
	if errA == nil && errB == nil && !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.CreationTimestamp.After(b.CreationTimestamp.Time) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name > b.Name
}

// jobNode is the name of the node a Job runs on: its pod's nodeName (the
// whole name; labelNode may be a shortened one).
func jobNode(j *batchv1.Job) string {
	if n := j.Spec.Template.Spec.NodeName; n != "" {
		return n
	}
	return j.Labels[labelNode]
}
