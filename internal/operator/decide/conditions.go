package decide

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// Rollup is what a reconcile found, from which the status is written.
type Rollup struct {
	Shim *v1alpha1.Shim
	// Nodes are the snapshot's node views.
	Nodes []NodeView
	// Counts are the status's node counts (Counts).
	Counts           v1alpha1.ShimStatus
	Install, Removal rollout.Plan
	Classes          ClassStatus
	// Refusal says why the spec is rolled out to no node (nil: it is).
	Refusal *Refusal
	// Delivered is where the progressive-delivery rules left the rollout.
	Delivered Delivered
	// Reverted names the target the rollout failed at when the nodes go
	// (or went) back to the previous revision instead ("": they do not);
	// Cause is why that rollout failed, as the status recorded it
	// (status.rollout.halt: the health gate's trip naming the pods and
	// nodes, or the nodes that failed).
	Reverted string
	Cause    *Trip
	// Draining says which nodes are being drained and what is left on
	// them (DrainNote; "": none).
	Draining string
}

// Refusal is why a spec is rolled out to no node: a reason constant of
// package v1alpha1 and a message naming the field.
type Refusal struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ClassStatus is where the Shim's RuntimeClasses stand.
type ClassStatus struct {
	// Published: every RuntimeClass of the Shim is the Shim's and up to
	// date.
	Published bool
	// Conflicts name the RuntimeClasses that belong to someone else.
	Conflicts []string
}

func (u Rollup) deleting() bool { return !u.Shim.DeletionTimestamp.IsZero() }
func (u Rollup) halted() bool   { return u.Install.Halted || u.Removal.Halted }
func (u Rollup) hold() Hold     { return u.Delivered.Hold }

// tripped is the rollout's halt by its health gate (nil: none).
func (u Rollup) tripped() *Trip {
	if u.deleting() || u.Reverted != "" {
		return nil
	}
	return u.Delivered.Halt
}
func (u Rollup) done() bool { return u.Install.Done && u.Removal.Done && !u.deleting() }

// Ready: every targeted node, and at least one, has the current spec, and
// every RuntimeClass is published. It is a function of the fleet's state
// alone: a Shim whose every node stopped being targeted (a preinstalled
// handler the admin removed) is as little Ready as a new Shim that
// selects no node, even though its RuntimeClasses stay.
func (u Rollup) Ready() bool {
	return u.done() && u.Counts.UpdatedNodes > 0 && u.Classes.Published && u.refused() == nil && u.Reverted == ""
}

// refused is the spec's refusal, unless the Shim is being deleted (its
// nodes are uninstalled whatever the spec).
func (u Rollup) refused() *Refusal {
	if u.deleting() {
		return nil
	}
	return u.Refusal
}

// Counts are the node counts of the status of the snapshot (the
// operator adds the artifact and the retry it acted on).
func Counts(s *Snapshot) v1alpha1.ShimStatus {
	st := v1alpha1.ShimStatus{ObservedGeneration: s.Shim.Generation, SpecHash: s.Hash}
	for _, v := range s.Views {
		if v.Targeted() {
			st.Nodes++
			if v.Label == record.Installed && v.SpecHash == s.Hash && v.Drifted == "" {
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
	st.SkippedNodes, st.Skipped = SkippedNodes(s.Views)
	st.ImageSources = ImageSources(s.Views)
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
func readyCondition(u Rollup) metav1.Condition {
	const t = v1alpha1.ConditionReady
	skipped := SkippedNote(u.Nodes)
	switch {
	case u.deleting():
		reason, msg := deletingNote(u)
		return condition(t, false, reason, msg)
	case u.refused() != nil:
		return condition(t, false, u.refused().Reason, u.refused().Message)
	case u.Reverted != "":
		return condition(t, false, revertReason(u), revertNote(u))
	case u.tripped() != nil:
		return condition(t, false, u.tripped().Reason, u.tripped().Message)
	case u.Ready():
		return condition(t, true, v1alpha1.ReasonRolledOut, fmt.Sprintf("%d of %d nodes have the current spec; %s published%s", u.Counts.UpdatedNodes, u.Counts.Nodes, runtimeClassNames(u.Shim), skipped))
	case u.done() && len(u.Classes.Conflicts) > 0:
		return condition(t, false, v1alpha1.ReasonRuntimeClassConflict, strings.Join(u.Classes.Conflicts, "; "))
	case u.done() && u.Counts.UpdatedNodes == 0:
		return condition(t, false, v1alpha1.ReasonNoNodes, "no node that can run the shim matches the selector"+skipped)
	case u.done():
		return condition(t, false, v1alpha1.ReasonRuntimeClassPending, fmt.Sprintf("%d of %d nodes have the current spec; a RuntimeClass is still to be published", u.Counts.UpdatedNodes, u.Counts.Nodes))
	}
	if h := u.hold(); h != HoldNone {
		return condition(t, false, string(h), fmt.Sprintf("%d of %d nodes have the current spec; %s%s", u.Counts.UpdatedNodes, u.Counts.Nodes, holdNote(u), skipped))
	}
	return condition(t, false, v1alpha1.ReasonRollingOut, fmt.Sprintf("%d of %d nodes have the current spec%s", u.Counts.UpdatedNodes, u.Counts.Nodes, skipped))
}

// revertReason: Reverting while nodes go back, Reverted once they are.
func revertReason(u Rollup) string {
	if u.done() {
		return v1alpha1.ReasonReverted
	}
	return v1alpha1.ReasonReverting
}

// revertNote says why the rollout failed and where the nodes stand: how
// many have the previous revision installed (a node whose revert has not
// succeeded yet is not counted).
func revertNote(u Rollup) string {
	return fmt.Sprintf("the rollout of %s failed (%s); %d of %d nodes have the previous revision %s; change the spec to roll out again",
		u.Reverted, RevertCause(u.Delivered.Halt, u.Cause), u.Counts.UpdatedNodes, u.Counts.Nodes, u.Counts.SpecHash)
}

// RevertCause says why a rollout failed: the halt of this decision, else
// the one the status recorded; "a node failed" when neither says more.
func RevertCause(halt, recorded *Trip) string {
	for _, t := range []*Trip{halt, recorded} {
		if t == nil {
			continue
		}
		if t.Reason == v1alpha1.ReasonWorkloadFailures {
			return "the health gate tripped: " + t.Message
		}
		return t.Message
	}
	return "a node failed"
}

// holdNote says why no node starts now.
func holdNote(u Rollup) string {
	d := u.Delivered
	switch d.Hold {
	case HoldPaused:
		return "the rollout is paused (spec.rolloutStrategy.paused)"
	case HoldWindow:
		if d.NextWindow.IsZero() {
			return "waiting for a maintenance window"
		}
		return "waiting for the next maintenance window, at " + d.NextWindow.UTC().Format(time.RFC3339)
	case HoldBaking:
		return fmt.Sprintf("step %d bakes until %s", d.Stage.Step+1, d.Stage.BakeUntil.UTC().Format(time.RFC3339))
	}
	return string(d.Hold)
}

// progressingCondition: nodes are changing, or why none starts.
func progressingCondition(u Rollup) metav1.Condition {
	const t = v1alpha1.ConditionProgressing
	switch {
	case u.refused() != nil:
		return condition(t, false, v1alpha1.ReasonHalted, "no node starts: the spec is refused ("+u.refused().Reason+")")
	case u.Reverted != "" && !u.done():
		return condition(t, true, v1alpha1.ReasonReverting, revertNote(u))
	case u.tripped() != nil:
		return condition(t, false, v1alpha1.ReasonHalted, "no new node starts until the spec changes or a retry (annotation "+v1alpha1.RetryAnnotation+"): "+u.tripped().Message)
	case u.halted():
		return condition(t, false, v1alpha1.ReasonHalted, "a node failed; no new node starts until the spec changes (spec.canary too, for a node whose canary failed) or a retry (annotation "+v1alpha1.RetryAnnotation+")")
	case u.hold() == HoldPaused || u.hold() == HoldWindow:
		return condition(t, false, string(u.hold()), holdNote(u))
	case u.hold() == HoldBaking:
		return condition(t, true, string(u.hold()), holdNote(u))
	case !u.done():
		msg := fmt.Sprintf("%d nodes changing (maxUpdate %d), %d to go",
			u.Install.InFlight+u.Removal.InFlight, max(u.Install.Budget, u.Removal.Budget), u.Install.Remaining+u.Removal.Remaining)
		if u.Draining != "" {
			msg += "; " + u.Draining
		}
		return condition(t, true, v1alpha1.ReasonNodesChanging, msg)
	}
	return condition(t, false, v1alpha1.ReasonIdle, "every node is done")
}

// degradedCondition: the first of a refused spec, failed nodes and
// RuntimeClasses of someone else; each names what it refused.
func degradedCondition(u Rollup, failing []v1alpha1.NodeFailure) metav1.Condition {
	const t = v1alpha1.ConditionDegraded
	switch {
	case u.refused() != nil:
		return condition(t, true, u.refused().Reason, u.refused().Message)
	case u.Reverted != "":
		return condition(t, true, v1alpha1.ReasonReverted, revertNote(u))
	case u.tripped() != nil:
		return condition(t, true, u.tripped().Reason, u.tripped().Message)
	case u.halted():
		names := make([]string, 0, len(failing))
		for _, f := range failing {
			names = append(names, f.Node+" ("+f.Reason+")")
		}
		return condition(t, true, v1alpha1.ReasonNodeFailed, "failed on "+strings.Join(names, ", "))
	case len(u.Classes.Conflicts) > 0 && !u.deleting():
		return condition(t, true, v1alpha1.ReasonRuntimeClassConflict, strings.Join(u.Classes.Conflicts, "; "))
	}
	return condition(t, false, v1alpha1.ReasonNoFailures, "no node failed")
}

// stall says why the operator can make no progress without a change of
// the spec or the cluster (reason "" when it can, or has nothing left to
// do): a refused spec, a failed node, a RuntimeClass of someone else, or
// no node to install. A failed resolution is no stall: it is retried.
func stall(u Rollup) (reason, msg string) {
	ref := u.refused()
	switch {
	case ref != nil && ref.Reason != v1alpha1.ReasonResolveFailed:
		return ref.Reason, ref.Message
	case u.Reverted != "" && u.done() && !u.deleting():
		return v1alpha1.ReasonReverted, revertNote(u)
	case u.Reverted != "" && !u.deleting():
		return "", ""
	case u.tripped() != nil:
		return u.tripped().Reason, u.tripped().Message + "; no new node starts until the spec changes or the annotation " + v1alpha1.RetryAnnotation + " retries it"
	case u.halted():
		return v1alpha1.ReasonNodeFailed, "a node failed (status.failingNodes); no new node starts until the spec changes (spec.canary too, for a node whose canary failed) or the annotation " + v1alpha1.RetryAnnotation + " retries it"
	case ref != nil, u.deleting(), !u.done(), u.Ready():
		return "", ""
	case len(u.Classes.Conflicts) > 0:
		return v1alpha1.ReasonRuntimeClassConflict, strings.Join(u.Classes.Conflicts, "; ")
	case u.Counts.UpdatedNodes == 0:
		return v1alpha1.ReasonNoNodes, "no node that can run the shim matches the selector" + SkippedNote(u.Nodes)
	}
	return "", "" // a RuntimeClass is still to be published
}

// reconcilingCondition (kstatus): True while the operator works towards
// the spec: nodes changing, the Shim's nodes being cleaned up before it
// goes, the artifact to be resolved again, or a RuntimeClass to be
// published.
func reconcilingCondition(u Rollup) metav1.Condition {
	const t = v1alpha1.ConditionReconciling
	if reason, _ := stall(u); reason != "" {
		return condition(t, false, v1alpha1.ReasonStalled, "waiting for a change: "+reason+" (see the Stalled condition)")
	}
	switch {
	case u.deleting():
		reason, msg := deletingNote(u)
		return condition(t, true, reason, msg)
	case u.refused() != nil:
		return condition(t, true, u.refused().Reason, "resolving again: "+u.refused().Message)
	case u.Reverted != "" && !u.done():
		return condition(t, true, v1alpha1.ReasonReverting, revertNote(u))
	case u.hold() != HoldNone && !u.done():
		return condition(t, true, string(u.hold()), holdNote(u))
	case !u.done():
		return condition(t, true, v1alpha1.ReasonNodesChanging, fmt.Sprintf("%d of %d nodes have the current spec", u.Counts.UpdatedNodes, u.Counts.Nodes))
	case !u.Ready():
		return condition(t, true, v1alpha1.ReasonRuntimeClassPending, "every node has the current spec; a RuntimeClass is still to be published")
	}
	return condition(t, false, v1alpha1.ReasonRolledOut, "the spec is rolled out")
}

// stalledCondition (kstatus): True when no progress is possible without a
// change; the reason is the refusal's, NodeFailed, RuntimeClassConflict or
// NoNodes.
func stalledCondition(u Rollup) metav1.Condition {
	const t = v1alpha1.ConditionStalled
	if reason, msg := stall(u); reason != "" {
		return condition(t, true, reason, msg)
	}
	if u.Ready() {
		return condition(t, false, v1alpha1.ReasonRolledOut, "the spec is rolled out")
	}
	return condition(t, false, v1alpha1.ReasonReconciling, "the operator is working towards the spec (see the Reconciling condition)")
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

// Conditions are the Shim's status conditions for the rollup (Ready,
// Progressing, Degraded, Reconciling, Stalled), each of the Shim's
// generation; failing are the nodes status.failingNodes lists.
func Conditions(u Rollup, failing []v1alpha1.NodeFailure) []metav1.Condition {
	cs := []metav1.Condition{readyCondition(u), progressingCondition(u), degradedCondition(u, failing), reconcilingCondition(u), stalledCondition(u)}
	for i := range cs {
		cs[i].ObservedGeneration = u.Shim.Generation
	}
	return cs
}
