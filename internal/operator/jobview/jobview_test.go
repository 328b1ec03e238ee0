package jobview_test

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func ended(cond batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobview.LabelOp: jobview.OpInstall, jobview.LabelSpecHash: "h1"},
		Annotations: map[string]string{jobview.AnnotationDigest: "sha256:aa"}}}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
	}
	return j
}

// TestView: what a Job says about its node's operation, from its
// conditions and the installer's result.
func TestView(t *testing.T) {
	installed := func(digest string) *plan.NodeResult { return &plan.NodeResult{Outcome: plan.Succeeded, Digest: digest} }
	for _, tc := range []struct {
		name                             string
		job                              *batchv1.Job
		result                           *plan.NodeResult
		batch                            int
		running, succeeded, failed, sibl bool
		reason                           string
	}{
		{name: "running", job: ended(""), running: true},
		{name: "complete", job: ended(batchv1.JobComplete), result: installed("sha256:aa"), succeeded: true},
		{name: "complete, no result read", job: ended(batchv1.JobComplete), succeeded: true},
		{name: "complete with another digest", job: ended(batchv1.JobComplete), result: installed("sha256:bb"), failed: true, reason: string(plan.ReasonDigestMismatch)},
		{name: "failed, the installer's reason", job: ended(batchv1.JobFailed), result: &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonConfigInvalid}, failed: true, reason: string(plan.ReasonConfigInvalid)},
		{name: "failed, no result: the Job's condition", job: ended(batchv1.JobFailed), failed: true, reason: "BackoffLimitExceeded"},
		{name: "a batch's plan committed before another failed", job: ended(batchv1.JobFailed), batch: 2, result: installed("sha256:aa"), succeeded: true},
		{name: "a batch's plan undone for another's failure", job: ended(batchv1.JobFailed), batch: 2, result: &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonSiblingFailed}, failed: true, sibl: true, reason: string(plan.ReasonSiblingFailed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := jobview.ViewOf(tc.job)
			v.Result, v.ResultRead, v.Batch = tc.result, tc.result != nil, tc.batch
			if v.Running() != tc.running || v.Succeeded() != tc.succeeded || v.Failed() != tc.failed || v.Sibling() != tc.sibl {
				t.Errorf("running %v succeeded %v failed %v sibling %v; want %v %v %v %v", v.Running(), v.Succeeded(), v.Failed(), v.Sibling(), tc.running, tc.succeeded, tc.failed, tc.sibl)
			}
			if reason, _ := v.Failure(); tc.failed && reason != tc.reason {
				t.Errorf("failure reason %q, want %q", reason, tc.reason)
			}
		})
	}
}

// TestFor: a Job is a Shim's when it controls it (its own), or when it
// carries its plan among a batch's members (the member's hash and digest).
func TestFor(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-spin"}}
	other := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "wasm", UID: "uid-wasm"}}
	controller := true
	own := ended("")
	own.Labels[jobview.LabelShim] = "spin"
	own.OwnerReferences = []metav1.OwnerReference{{UID: "uid-spin", Controller: &controller}}
	batch := ended("")
	batch.OwnerReferences = []metav1.OwnerReference{{UID: "uid-wasm", Controller: &controller}, {UID: "uid-spin"}}
	batch.Annotations[jobview.MembersAnnotation] = `[{"shim":"wasm","specHash":"w1"},{"shim":"spin","specHash":"s9","digest":"sha256:cc"}]`
	if v, ok := jobview.For(own, shim); !ok || v.SpecHash != "h1" || v.Batch != 0 {
		t.Errorf("own Job: %+v, %v", v, ok)
	}
	if _, ok := jobview.For(own, other); ok {
		t.Error("another Shim's Job is the Shim's")
	}
	if v, ok := jobview.For(batch, shim); !ok || v.SpecHash != "s9" || v.Digest != "sha256:cc" || v.Batch != 2 || v.Op != jobview.OpInstall {
		t.Errorf("batch member: %+v, %v", v, ok)
	}
	if got := jobview.MemberLabels(batch); strings.Join(got, ",") != "wasm,spin" {
		t.Errorf("MemberLabels = %v", got)
	}
}

// TestNewer: the operator's nanosecond creation time orders Jobs created
// within one second; then creationTimestamp, then the name.
func TestNewer(t *testing.T) {
	at := func(name string, created time.Time, nanos string) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if nanos != "" {
			j.Annotations = map[string]string{jobview.AnnotationCreated: nanos}
		}
		return j
	}
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	a := at("a", t0, "2026-11-25T09:00:00.9Z")
	b := at("b", t0, "2026-11-25T09:00:00.1Z")
	if !jobview.Newer(a, b) || jobview.Newer(b, a) {
		t.Error("the nanosecond annotation does not order Jobs of one second")
	}
	if !jobview.Newer(at("a", t0.Add(time.Second), ""), at("b", t0, "")) || !jobview.Newer(at("b", t0, ""), at("a", t0, "")) || !jobview.Newer(a, nil) {
		t.Error("creationTimestamp, then the name, do not order Jobs")
	}
}

// TestNames: Job names and label values are valid however long the Shim
// and node names, stable, and distinct per operation and spec.
func TestNames(t *testing.T) {
	long := strings.Repeat("very-long-name.", 20)
	for _, op := range []string{jobview.OpInstall, jobview.OpUninstall, jobview.OpVerify} {
		n := jobview.JobName(long, long, op, "h1")
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("JobName %q: %v", n, errs)
		}
		if n != jobview.JobName(long, long, op, "h1") || n == jobview.JobName(long, long, op, "h2") {
			t.Errorf("JobName %q is not stable and distinct per spec", n)
		}
	}
	if v := jobview.LabelValue(long); len(validation.IsValidLabelValue(v)) > 0 || v == jobview.LabelValue(long+"x") {
		t.Errorf("LabelValue %q is not a valid, distinct label value", v)
	}
	if jobview.LabelValue("spin") != "spin" {
		t.Error("a short name is not its own label value")
	}
}
