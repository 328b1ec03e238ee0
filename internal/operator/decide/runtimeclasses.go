package decide

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"

	"github.com/shimkit/shimkit/internal/classstep"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ClassPlan is what a reconcile does to the Shim's RuntimeClasses, decided
// on the Snapshot's ClassSet: first the takeovers from the
// runtime-class-manager Shim that spec.migrateFrom names, then the
// deletions of the Shim's own classes the spec no longer names, then one
// step per class to publish. No step writes a RuntimeClass that someone
// else owns (the runtime-class-manager Shim of the UID read excepted, for a
// takeover): such a class is a conflict, with a message naming it.
type ClassPlan struct {
	Takeovers []ClassStep
	Deletes   []ClassDelete
	Ensures   []ClassStep
	// Conflicts are the messages of the classes left as they are because
	// they belong to someone else, in the order of the spec.
	Conflicts []string
	// Warnings are the Warning Events of the classes that belong to
	// someone else (each relates to its class).
	Warnings []Notice
	// Published: every class the spec names is (or, once the steps are
	// written, will be) the Shim's and up to date.
	Published bool
	// CanaryBlocked: the canary's class belongs to someone else, so no
	// installer can run its canary: no install starts.
	CanaryBlocked bool
}

// ClassStep is one class's step (classstep.Decide or DecideTakeover),
// the spec it is for, and the Event said once the step is written (a
// class created, updated or replaced; taken over; fenced).
type ClassStep struct {
	Spec shimspec.Class
	Step classstep.Step
	Said Notice
}

// ClassDelete is a class of the Shim's to delete, as read, and the Event
// said once it is deleted (its note says why).
type ClassDelete struct {
	Class *nodev1.RuntimeClass
	Said  Notice
}

// Classes decides the ClassPlan. starting: this reconcile starts an
// install (the decision's first wave). A class is created once the first
// node has the shim; the canary's (shimspec.CanaryClass) only while an
// installer may run the canary: when starting, or while a node has the
// shim or a Job is changing it; any other time the Shim's own canary
// class is deleted, and one that belongs to someone else is not looked at
// (it blocks, as a conflict, only a rollout about to start).
func Classes(obs *Snapshot, starting bool) ClassPlan {
	view := map[string]*nodev1.RuntimeClass{}
	for _, rc := range obs.Classes.All() {
		view[rc.Name] = rc
	}
	var p ClassPlan
	takeover := p.takeOver(obs, view)
	anyInstalled, anyTouched := false, false
	for _, v := range obs.Views {
		anyInstalled = anyInstalled || v.Label == record.Installed
		// A node whose image has the shim runs no installer, so no canary.
		anyTouched = anyTouched || !v.Preinstalled && v.Touched() || v.Held
	}
	specs := shimspec.Classes(obs.Shim)
	canary, withCanary := shimspec.CanaryClass(obs.Shim)
	if withCanary && (starting || anyTouched) {
		specs = append(specs, canary)
	}
	for _, name := range sortedNames(view) {
		rc := view[name]
		if !shimspec.OwnedBy(rc, obs.Shim) || slices.ContainsFunc(specs, func(s shimspec.Class) bool { return s.Name == name }) {
			continue
		}
		why := "no longer in the spec"
		if name == canary.Name {
			why = "no node is being installed or has the shim (the canary's RuntimeClass is published only while one is)"
		}
		p.Deletes = append(p.Deletes, ClassDelete{Class: rc, Said: Notice{Type: corev1.EventTypeNormal, Reason: "RuntimeClassDeleted", Action: "Delete",
			Note: "RuntimeClass " + name + ": " + why, Class: rc}})
	}
	p.Published = true
	for _, spec := range specs {
		isCanary := withCanary && spec.Field == canary.Field
		st, err := classstep.Decide(view[spec.Name], spec.Spec, anyInstalled || isCanary)
		var conflict *classstep.ConflictError
		switch {
		case errors.As(err, &conflict):
			msg := conflictMessage(conflict, spec)
			p.Warnings = append(p.Warnings, Notice{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonRuntimeClassConflict, Action: "Apply",
				Note: msg, Class: classNamed(conflict.Name)})
			if m := takeover[spec.Name]; m != "" {
				msg = m // the migration's predecessor's: say why it was not taken over
			}
			p.Conflicts = append(p.Conflicts, msg)
			p.CanaryBlocked = p.CanaryBlocked || isCanary
			p.Published = false
			continue
		case err != nil:
			p.Conflicts = append(p.Conflicts, fmt.Sprintf("RuntimeClass %s (%s): %v", spec.Name, spec.Field, err))
			p.Published = false
			continue
		}
		p.Published = p.Published && st.Result != classstep.Absent && st.Result != classstep.Retry
		p.Ensures = append(p.Ensures, ClassStep{Spec: spec, Step: st, Said: Notice{Type: corev1.EventTypeNormal, Reason: "RuntimeClassApplied", Action: "Apply",
			Note: fmt.Sprintf("RuntimeClass %s for handler %s", spec.Name, spec.Handler), Class: classNamed(spec.Name)}})
	}
	return p
}

// takeOver decides the takeovers (spec.migrateFrom), and leaves view as
// it will be once they are written. It returns, by name, why a class of
// the predecessor's is not taken over.
func (p *ClassPlan) takeOver(obs *Snapshot, view map[string]*nodev1.RuntimeClass) map[string]string {
	m := obs.Shim.Spec.MigrateFrom
	if m == nil {
		return nil
	}
	anyUID := shimspec.RCMPredecessor(m)
	from := anyUID
	from.UID = obs.RCMUID
	why := map[string]string{}
	for _, spec := range shimspec.Classes(obs.Shim) {
		rc := view[spec.Name]
		if rc == nil || !anyUID.Controls(rc) {
			continue // absent, ours already, or someone else's: Classes says which
		}
		st, err := classstep.DecideTakeover(rc, spec.Spec, from)
		var conflict *classstep.ConflictError
		switch {
		case errors.As(err, &conflict) && conflict.WantHandler != "":
			why[spec.Name] = fmt.Sprintf("RuntimeClass %s (%s) is not taken over from %s, which spec.migrateFrom names: its handler is %s, not %s (a RuntimeClass's handler cannot change, and its pods run on it); it is left as it is",
				spec.Name, spec.Field, from, conflict.Handler, conflict.WantHandler)
		case errors.As(err, &conflict):
			why[spec.Name] = fmt.Sprintf("RuntimeClass %s (%s) is not taken over from %s, which spec.migrateFrom names: %s, not that Shim of UID %s; it is left as it is",
				spec.Name, spec.Field, from, conflict.Holder(), from.UID)
		case err != nil:
			why[spec.Name] = fmt.Sprintf("RuntimeClass %s (%s): %v", spec.Name, spec.Field, err)
		case st.Result == classstep.Retry:
			why[spec.Name] = fmt.Sprintf("RuntimeClass %s (%s) is being taken over from %s: it changed meanwhile, retrying", spec.Name, spec.Field, from)
		case st.Result == classstep.TakenOver:
			p.Takeovers = append(p.Takeovers, ClassStep{Spec: spec, Step: st, Said: Notice{Type: corev1.EventTypeNormal, Reason: "RuntimeClassTakenOver", Action: "Migrate",
				Note: fmt.Sprintf("RuntimeClass %s (handler %s) taken over from %s: deleting that Shim no longer deletes it", spec.Name, spec.Handler, from), Class: rc}})
			view[spec.Name] = st.Write
		}
	}
	return why
}

// conflictMessage names the RuntimeClass, the field and who owns it.
func conflictMessage(c *classstep.ConflictError, spec shimspec.Class) string {
	if spec.Field == "spec.canary" {
		return fmt.Sprintf("RuntimeClass %s (the canary's) exists and does not belong to this Shim (%s): no node is installed until it is removed (or spec.canary.enabled is false)", c.Name, c.Holder())
	}
	return fmt.Sprintf("RuntimeClass %s (%s) exists and does not belong to this Shim (%s): it is left as it is; rename %s or remove that RuntimeClass",
		c.Name, spec.Field, c.Holder(), spec.Field)
}

// RCMRelease is a node whose runtime-class-manager label (Key) the plan
// removes: the Shim is installed there (spec.migrateFrom), so that
// runtime-class-manager no longer counts it as its own. Said is the Event
// once it is removed.
type RCMRelease struct {
	Node *corev1.Node
	Key  string
	Said Notice
}

// RCMReleases are the nodes the Shim is installed on that still carry the
// label of the runtime-class-manager Shim spec.migrateFrom names; a node
// keeps it while shimkit has not installed it.
func RCMReleases(obs *Snapshot) []RCMRelease {
	m := obs.Shim.Spec.MigrateFrom
	if m == nil {
		return nil
	}
	key := m.RuntimeClassManager.Shim
	var out []RCMRelease
	for i := range obs.Views {
		v := &obs.Views[i]
		if v.Label == record.Installed && shimspec.HasRCMLabel(v.Node, key) {
			out = append(out, RCMRelease{Node: v.Node, Key: key, Said: Notice{Type: corev1.EventTypeNormal, Reason: "Migrated", Action: "Migrate", Node: v.Node,
				Note: fmt.Sprintf("node %s: runtime-class-manager's label %s=%s removed", v.Node.Name, key, v.Node.Labels[key])}})
		}
	}
	return out
}

// LabelFenced is the value a deleted Shim's RuntimeClasses select while
// its removal waits for pods (FenceClasses): no node carries it.
const LabelFenced = "fenced"

// FenceClasses are the steps that fence a deleted Shim's RuntimeClasses
// while its removal is not done: each of the Shim's own classes (the
// canary's aside, which selects no node) comes to select
// LabelFenced, which no node carries, so that no new pod of the class is
// scheduled anywhere, while the pods already admitted keep the selector
// they were admitted with (the RuntimeClass's is merged into a pod when
// it is created), and with it the node label their kubelet re-checks.
// A class someone else owns is not written (no step); one fenced
// already is Unchanged.
func FenceClasses(obs *Snapshot) []ClassStep {
	if obs.Classes == nil {
		return nil // a preview given none
	}
	var out []ClassStep
	for _, spec := range shimspec.Classes(obs.Shim) {
		rc, _ := obs.Classes.Read(spec.Name)
		if rc == nil || !shimspec.OwnedBy(rc, obs.Shim) {
			continue
		}
		spec.NodeSelector = map[string]string{shimspec.SchedulingKey(obs.Shim): LabelFenced}
		st, err := classstep.Decide(rc, spec.Spec, false)
		if err != nil || st.Result != classstep.Updated {
			continue // someone else's, going, or fenced already: never replaced under its pods
		}
		out = append(out, ClassStep{Spec: spec, Step: st, Said: Notice{Type: corev1.EventTypeNormal, Reason: "RuntimeClassFenced", Action: "Uninstall", Class: classNamed(spec.Name),
			Note: "RuntimeClass " + spec.Name + ": no new pod is scheduled with it while the Shim is removed; its running pods keep their nodes"}})
	}
	return out
}
