package jobview

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Operations a Job runs.
const (
	OpInstall   = "install"
	OpUninstall = "uninstall"
	// OpVerify checks a node against what its install recorded, changing
	// nothing (the operator's periodic verification).
	OpVerify = "verify"
)

// Labels on the Jobs, their pods and the RuntimeClasses. The values of
// LabelShim and LabelNode are the names, hashed when too long
// (LabelValue); the Job's pod spec has the node's whole name.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "shimkit"
	LabelShim      = "shim.containerd.x-k8s.io/shim"
	LabelNode      = "shim.containerd.x-k8s.io/node"
	LabelOp        = "shim.containerd.x-k8s.io/op"
	LabelSpecHash  = "shim.containerd.x-k8s.io/spec-hash"
	// AnnotationDigest on an install Job is the artifact digest its plan
	// pins: the node is up to date only when its installer reports it.
	AnnotationDigest = "shim.containerd.x-k8s.io/digest"
	// AnnotationCreated is when the operator created the Job, in
	// nanoseconds (Newer).
	AnnotationCreated = "shim.containerd.x-k8s.io/created"
	// AnnotationCanary on an install Job is the hash of the canary it runs
	// (the operator's hash of spec.canary): a node whose canary failed is tried again when the
	// canary changes.
	AnnotationCanary = "shim.containerd.x-k8s.io/canary"
	// AnnotationMachine is the machine of the node the Job was made for
	// (record.Machine): a Job that ended on the machine a node had before
	// a reimage under its name says nothing of the node now.
	AnnotationMachine = "shim.containerd.x-k8s.io/machine"
	// AnnotationLogKept on a failed Job says the operator has kept what it
	// leaves (the Job for longer, a copy of its log): written last, so a
	// failure recorded by an operator that stopped before is kept by the
	// next one.
	AnnotationLogKept = "shim.containerd.x-k8s.io/log-kept"
)

// View is what a Job says about its node's operation, as the operator reads it.
type View struct {
	Object   *batchv1.Job
	Op       string
	SpecHash string
	Digest   string // the pinned digest (AnnotationDigest)
	Canary   string // the canary's hash (AnnotationCanary)
	Machine  string // the node's machine it was made for (AnnotationMachine)
	LogKept  bool   // a failed Job's log kept (AnnotationLogKept)
	// Result is the installer's NodeResult, once read from a finished
	// Job's pod (ResultRead: read, even when none was found).
	Result     *plan.NodeResult
	ResultRead bool
	// Batch is how many Shims' plans the Job carries (0: one, its own).
	Batch int
}

func ViewOf(j *batchv1.Job) *View {
	return &View{Object: j, Op: j.Labels[LabelOp], SpecHash: j.Labels[LabelSpecHash], Digest: j.Annotations[AnnotationDigest], Canary: j.Annotations[AnnotationCanary], Machine: j.Annotations[AnnotationMachine], LogKept: j.Annotations[AnnotationLogKept] != ""}
}

func (v *View) Condition(t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range v.Object.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &v.Object.Status.Conditions[i]
		}
	}
	return nil
}

// Succeeded: the Job completed, and its installer installed the pinned
// digest (when it reported one); or, a batch Job that failed, its
// installer reports this Shim's plan committed before another's failed.
func (v *View) Succeeded() bool {
	switch {
	case v.Condition(batchv1.JobComplete) != nil:
		return !v.WrongDigest()
	case v.Batch > 0 && v.Condition(batchv1.JobFailed) != nil:
		return v.Result != nil && v.Result.Outcome == plan.Succeeded && !v.WrongDigest()
	}
	return false
}

// Failed: the Job Failed (for this Shim's plan), or completed with another
// digest than the pinned one.
func (v *View) Failed() bool {
	return (v.Condition(batchv1.JobFailed) != nil || v.Condition(batchv1.JobComplete) != nil) && !v.Succeeded()
}

// Sibling: this Shim's plan of a batch Job was undone because another
// Shim's failed (plan.ReasonSiblingFailed): no failure of its own, and the
// node is installed again, alone.
func (v *View) Sibling() bool {
	return v.Batch > 0 && v.Failed() && v.Result != nil && v.Result.Reason == plan.ReasonSiblingFailed
}

// InUse: the installer refused to remove a handler that pod sandboxes on
// the node use (plan.ReasonHandlerInUse): the node changed nothing and
// waits for them, which is no failure.
func (v *View) InUse() bool {
	return v.Failed() && v.Result != nil && v.Result.Reason == plan.ReasonHandlerInUse
}

// Ended is when the Job ended (its Complete or Failed condition's
// transition); zero while it runs.
func (v *View) Ended() time.Time {
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete} {
		if c := v.Condition(t); c != nil {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// WrongDigest: the installer reports having installed another artifact
// than the plan pinned.
func (v *View) WrongDigest() bool {
	r := v.Result
	return v.Op == OpInstall && v.Digest != "" && r != nil && r.Outcome == plan.Succeeded && r.Digest != v.Digest
}
func (v *View) Running() bool {
	return !v.Succeeded() && !v.Failed() && v.Object.DeletionTimestamp == nil
}

// Failure explains a failed Job: the installer's reason and message, or
// the Job's condition when the installer left no result.
func (v *View) Failure() (reason, message string) {
	if v.WrongDigest() {
		return string(plan.ReasonDigestMismatch), fmt.Sprintf("installed %s, the rollout pins %s", v.Result.Digest, v.Digest)
	}
	if r := v.Result; r != nil && r.Outcome != plan.Succeeded {
		if r.Reason == "" {
			return string(r.Outcome), r.Message
		}
		return string(r.Reason), r.Message
	}
	c := v.Condition(batchv1.JobFailed)
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// Newer reports whether a is a later Job than b for the same node: by the
// operator's creation time in nanoseconds (AnnotationCreated; Jobs of a
// fast rollout are often created within the same second, the resolution
// of creationTimestamp), then creationTimestamp, then name.
func Newer(a, b *batchv1.Job) bool {
	if b == nil {
		return true
	}
	ta, errA := time.Parse(time.RFC3339Nano, a.Annotations[AnnotationCreated])
	tb, errB := time.Parse(time.RFC3339Nano, b.Annotations[AnnotationCreated])
	if errA == nil && errB == nil && !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.CreationTimestamp.After(b.CreationTimestamp.Time) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name > b.Name
}

// NodeOf is the name of the node a Job runs on: its pod's nodeName (the
// whole name; LabelNode may be a shortened one).
func NodeOf(j *batchv1.Job) string {
	if n := j.Spec.Template.Spec.NodeName; n != "" {
		return n
	}
	return j.Labels[LabelNode]
}

// MembersAnnotation on a batch Job lists the Shims whose install plans it
// carries: a JSON list of {"shim", "specHash", "digest"}, one per plan.
const MembersAnnotation = "shim.containerd.x-k8s.io/members"

// Member is one Shim of a batch Job.
type Member struct {
	Shim     string `json:"shim"`
	SpecHash string `json:"specHash"`
	Digest   string `json:"digest,omitempty"`
	// Canary is the hash of the member's canary (AnnotationCanary).
	Canary string `json:"canary,omitempty"`
}

// Members returns a batch Job's members; nil for a Job of one Shim.
func Members(j *batchv1.Job) []Member {
	raw := j.Annotations[MembersAnnotation]
	if raw == "" {
		return nil
	}
	var ms []Member
	if err := json.Unmarshal([]byte(raw), &ms); err != nil {
		return nil
	}
	return ms
}

// MemberLabels returns the label values of a batch Job's Shims.
func MemberLabels(j *batchv1.Job) []string {
	var out []string
	for _, m := range Members(j) {
		out = append(out, LabelValue(m.Shim))
	}
	return out
}

// For returns the view of a Job as the shim's: its own Job, or a batch
// Job carrying its plan (whose spec hash and digest are the member's).
func For(j *batchv1.Job, shim *v1alpha1.Shim) (*View, bool) {
	ms := Members(j)
	if ms == nil {
		if j.Labels[LabelShim] != LabelValue(shim.Name) || !metav1.IsControlledBy(j, shim) {
			return nil, false
		}
		return ViewOf(j), true
	}
	if !HasOwner(j, shim.UID) {
		return nil, false
	}
	for _, m := range ms {
		if m.Shim == shim.Name {
			v := ViewOf(j)
			v.Op, v.SpecHash, v.Digest, v.Canary, v.Batch = OpInstall, m.SpecHash, m.Digest, m.Canary, len(ms)
			return v, true
		}
	}
	return nil, false
}

// HasOwner: one of the Job's owner references names the UID (a batch
// Job's partners are owners, not its controller).
func HasOwner(j *batchv1.Job, uid types.UID) bool {
	return slices.ContainsFunc(j.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == uid })
}
