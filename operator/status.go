package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// rollup is what a reconcile found, from which the status is written.
type rollup struct {
	obs              *observed
	st               v1alpha1.ShimStatus // the counts
	install, removal rollout.Plan
	classes          classes
}

func (u rollup) deleting() bool { return !u.obs.shim.DeletionTimestamp.IsZero() }
func (u rollup) halted() bool   { return u.install.Halted || u.removal.Halted }
func (u rollup) done() bool     { return u.install.Done && u.removal.Done && !u.deleting() }
func (u rollup) ready() bool    { return u.done() && u.classes.published && u.refused() == nil }

// refused is the spec's refusal, unless the Shim is being deleted (its
// nodes are uninstalled whatever the spec).
func (u rollup) refused() *refusal {
	if u.deleting() {
		return nil
	}
	return u.obs.refusal
}

// updateStatus writes counts and conditions with server-side apply (field
// owner shimkit), skipping the request when nothing changed.
func (r *Reconciler) updateStatus(ctx context.Context, obs *observed, install, removal rollout.Plan, rcs classes) error {
	shim := obs.shim
	u := rollup{obs: obs, st: counts(obs), install: install, removal: removal, classes: rcs}
	st := u.st
	failing := failedNodes(obs, install, removal)
	st.FailedNodes = int32(len(failing))
	st.FailingNodes = failing[:min(len(failing), 10)]
	// A copy: SetStatusCondition changes conditions in place, and the
	// Shim's own must stay as read, to compare with.
	conditions := slices.Clone(shim.Status.Conditions)
	for _, c := range []metav1.Condition{
		readyCondition(u), progressingCondition(u), degradedCondition(u, st.FailingNodes),
		reconcilingCondition(u), stalledCondition(u),
	} {
		c.ObservedGeneration = shim.Generation
		meta.SetStatusCondition(&conditions, c)
	}
	st.Conditions = conditions
	r.metrics.observe(shim, st, u.ready())

	if equalStatus(shim.Status, st) {
		return nil
	}
	// Only counts changed, during a rollout: at most one write a second.
	now := time.Now()
	if !obs.settled && equalConditions(shim.Status.Conditions, st.Conditions) {
		if next := r.statusPace.next(shim.Name, statusEvery); now.Before(next) {
			obs.due = next
			return nil
		}
	}
	obj, err := statusApply(shim, st)
	if err != nil {
		return err
	}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("status of Shim %s: %w", shim.Name, err)
	}
	shim.Status = st
	r.statusPace.wrote(shim.Name, now)
	return nil
}

// statusEvery is how often a rollout's status is written when only its
// counts changed; a condition that changes is written at once.
const statusEvery = time.Second

// pace remembers when something of each Shim was last written (its
// status, its gathered events), so that it is written at most so often.
type pace struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// next is when the shim's may be written again, every after the last.
func (p *pace) next(shim string, every time.Duration) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last[shim].Add(every)
}

func (p *pace) wrote(shim string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]time.Time{}
	}
	p.last[shim] = at
}

func (p *pace) forget(shim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, shim)
}

// equalConditions: the same conditions with the same statuses, reasons
// and generations (their messages carry the counts).
func equalConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.ObservedGeneration == y.ObservedGeneration
	})
}

// counts are the node counts of the status.
func counts(obs *observed) v1alpha1.ShimStatus {
	st := v1alpha1.ShimStatus{ObservedGeneration: obs.shim.Generation, SpecHash: obs.hash, Artifact: obs.shown, Retried: obs.retried}
	for _, v := range obs.views {
		if v.Targeted() {
			st.Nodes++
			if v.Label == nodelabel.Installed && v.SpecHash == obs.hash && v.Drifted == "" {
				st.UpdatedNodes++
			}
			if v.Drifted != "" {
				st.DriftedNodes++
			}
		}
		if v.Held || v.Job != nil && v.Job.Running() {
			st.InProgressNodes++
		}
	}
	st.SkippedNodes, st.Skipped = skippedNodes(obs.views)
	return st
}

func condition(t string, ok bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

// readyCondition: every targeted node has the current spec and every
// RuntimeClass is published; else why not.
func readyCondition(u rollup) metav1.Condition {
	const t = v1alpha1.ConditionReady
	skipped := skippedNote(u.obs.views)
	switch {
	case u.deleting():
		return condition(t, false, v1alpha1.ReasonDeleting, fmt.Sprintf("removing the shim from %d nodes", u.removal.Remaining))
	case u.refused() != nil:
		return condition(t, false, u.refused().reason, u.refused().message)
	case u.ready():
		return condition(t, true, v1alpha1.ReasonRolledOut, fmt.Sprintf("%d of %d nodes have the current spec; %s published%s", u.st.UpdatedNodes, u.st.Nodes, runtimeClassNames(u.obs.shim), skipped))
	case u.done() && len(u.classes.conflicts) > 0:
		return condition(t, false, v1alpha1.ReasonRuntimeClassConflict, strings.Join(u.classes.conflicts, "; "))
	case u.done():
		return condition(t, false, v1alpha1.ReasonNoNodes, "no node that can run the shim matches the selector; no RuntimeClass is published"+skipped)
	}
	return condition(t, false, v1alpha1.ReasonRollingOut, fmt.Sprintf("%d of %d nodes have the current spec%s", u.st.UpdatedNodes, u.st.Nodes, skipped))
}

// progressingCondition: nodes are changing, or why none starts.
func progressingCondition(u rollup) metav1.Condition {
	const t = v1alpha1.ConditionProgressing
	switch {
	case u.refused() != nil:
		return condition(t, false, v1alpha1.ReasonHalted, "no node starts: the spec is refused ("+u.refused().reason+")")
	case u.halted():
		return condition(t, false, v1alpha1.ReasonHalted, "a node failed; no new node starts until the spec changes (spec.canary too, for a node whose canary failed) or a retry (annotation "+v1alpha1.RetryAnnotation+")")
	case !u.done():
		return condition(t, true, v1alpha1.ReasonNodesChanging, fmt.Sprintf("%d nodes changing (maxUpdate %d), %d to go",
			u.install.InFlight+u.removal.InFlight, max(u.install.Budget, u.removal.Budget), u.install.Remaining+u.removal.Remaining))
	}
	return condition(t, false, v1alpha1.ReasonIdle, "every node is done")
}

// degradedCondition: the first of a refused spec, failed nodes and
// RuntimeClasses of someone else; each names what it refused.
func degradedCondition(u rollup, failing []v1alpha1.NodeFailure) metav1.Condition {
	const t = v1alpha1.ConditionDegraded
	switch {
	case u.refused() != nil:
		return condition(t, true, u.refused().reason, u.refused().message)
	case u.halted():
		names := make([]string, 0, len(failing))
		for _, f := range failing {
			names = append(names, f.Node+" ("+f.Reason+")")
		}
		return condition(t, true, v1alpha1.ReasonNodeFailed, "failed on "+strings.Join(names, ", "))
	case len(u.classes.conflicts) > 0 && !u.deleting():
		return condition(t, true, v1alpha1.ReasonRuntimeClassConflict, strings.Join(u.classes.conflicts, "; "))
	}
	return condition(t, false, v1alpha1.ReasonNoFailures, "no node failed")
}

// stall says why the operator can make no progress without a change of
// the spec or the cluster (reason "" when it can, or has nothing left to
// do): a refused spec, a failed node, a RuntimeClass of someone else, or
// no node to install. A failed resolution is no stall: it is retried.
func stall(u rollup) (reason, msg string) {
	ref := u.refused()
	switch {
	case ref != nil && ref.reason != v1alpha1.ReasonResolveFailed:
		return ref.reason, ref.message
	case u.halted():
		return v1alpha1.ReasonNodeFailed, "a node failed (status.failingNodes); no new node starts until the spec changes (spec.canary too, for a node whose canary failed) or the annotation " + v1alpha1.RetryAnnotation + " retries it"
	case ref != nil, u.deleting(), !u.done(), u.ready():
		return "", ""
	case len(u.classes.conflicts) > 0:
		return v1alpha1.ReasonRuntimeClassConflict, strings.Join(u.classes.conflicts, "; ")
	case u.st.Nodes == 0:
		return v1alpha1.ReasonNoNodes, "no node that can run the shim matches the selector" + skippedNote(u.obs.views)
	}
	return "", "" // a RuntimeClass is still to be published
}

// reconcilingCondition (kstatus): True while the operator works towards
// the spec: nodes changing, the Shim's nodes being cleaned up before it
// goes, the artifact to be resolved again, or a RuntimeClass to be
// published.
func reconcilingCondition(u rollup) metav1.Condition {
	const t = v1alpha1.ConditionReconciling
	if reason, _ := stall(u); reason != "" {
		return condition(t, false, v1alpha1.ReasonStalled, "waiting for a change: "+reason+" (see the Stalled condition)")
	}
	switch {
	case u.deleting():
		return condition(t, true, v1alpha1.ReasonDeleting, fmt.Sprintf("removing the shim from %d nodes", u.removal.Remaining))
	case u.refused() != nil:
		return condition(t, true, u.refused().reason, "resolving again: "+u.refused().message)
	case !u.done():
		return condition(t, true, v1alpha1.ReasonNodesChanging, fmt.Sprintf("%d of %d nodes have the current spec", u.st.UpdatedNodes, u.st.Nodes))
	case !u.ready():
		return condition(t, true, v1alpha1.ReasonRuntimeClassPending, "every node has the current spec; a RuntimeClass is still to be published")
	}
	return condition(t, false, v1alpha1.ReasonRolledOut, "the spec is rolled out")
}

// stalledCondition (kstatus): True when no progress is possible without a
// change; the reason is the refusal's, NodeFailed, RuntimeClassConflict or
// NoNodes.
func stalledCondition(u rollup) metav1.Condition {
	const t = v1alpha1.ConditionStalled
	if reason, msg := stall(u); reason != "" {
		return condition(t, true, reason, msg)
	}
	if u.ready() {
		return condition(t, false, v1alpha1.ReasonRolledOut, "the spec is rolled out")
	}
	return condition(t, false, v1alpha1.ReasonReconciling, "the operator is working towards the spec (see the Reconciling condition)")
}

const fieldOwner = "shimkit"

// statusApply is the apply request for the status subresource.
func statusApply(shim *v1alpha1.Shim, st v1alpha1.ShimStatus) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.Shim{Status: st})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": obj["status"]}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("Shim")
	u.SetName(shim.Name)
	return u, nil
}

// equalStatus compares statuses, ignoring when conditions last changed.
func equalStatus(a, b v1alpha1.ShimStatus) bool {
	strip := func(s v1alpha1.ShimStatus) v1alpha1.ShimStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// runtimeClassNames says which RuntimeClasses a Shim publishes:
// "RuntimeClass kata is" or "RuntimeClasses kata, kata-qemu are".
func runtimeClassNames(shim *v1alpha1.Shim) string {
	names := []string{shim.Spec.RuntimeClass.Name}
	for _, h := range shim.Spec.Handlers {
		names = append(names, h.RuntimeClass.Name)
	}
	if len(names) == 1 {
		return "RuntimeClass " + names[0] + " is"
	}
	return "RuntimeClasses " + strings.Join(names, ", ") + " are"
}
