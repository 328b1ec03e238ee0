package status

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// Update writes counts and conditions with server-side apply (field
// owner shimkit), skipping the request when nothing changed.
func (r *Reporter) Update(ctx context.Context, obs *decide.Snapshot, install, removal rollout.Plan, rcs decide.ClassPlan) error {
	shim := obs.Shim
	snap := obs.Fleet()
	st := fleet.Counts(snap)
	st.Artifact, st.Retried = obs.Shown, obs.Retried
	u := fleet.Rollup{Shim: shim, Nodes: snap.Nodes, Counts: st, Install: install, Removal: removal,
		Classes: fleet.Classes{Published: rcs.Published, Conflicts: rcs.Conflicts}}
	if ref := obs.Refusal; ref != nil {
		u.Refusal = &fleet.Refusal{Reason: ref.Reason, Message: ref.Message}
	}
	u.Delivered, u.Reverted = obs.Delivered, obs.Reverted
	st.Rollout, st.Revisions = shim.Status.Rollout, shim.Status.Revisions
	if obs.Rollout != nil {
		st.Rollout = obs.Rollout
	}
	if st.Rollout != nil && obs.Reverted != "" {
		u.Cause = decide.HaltTrip(st.Rollout.Halt)
	}
	if u.Ready() && obs.Reverted == "" {
		if err := r.revisions.Record(ctx, obs); err != nil {
			return err
		}
		st.Revisions = obs.Revisions
	}
	failing := decide.FailedNodes(obs, install, removal)
	st.FailedNodes = int32(len(failing))
	st.FailingNodes = failing[:min(len(failing), 10)]
	// A copy: SetStatusCondition changes conditions in place, and the
	// Shim's own must stay as read, to compare with.
	conditions := slices.Clone(shim.Status.Conditions)
	for _, c := range fleet.Conditions(u, st.FailingNodes) {
		meta.SetStatusCondition(&conditions, c)
	}
	st.Conditions = conditions
	r.metrics.Observe(shim, st, u.Ready())
	r.metrics.Conditions(shim.Name, st.Conditions)

	if equalStatus(shim.Status, st) {
		return nil
	}
	// Only counts changed, during a rollout: at most one write a second.
	now := time.Now()
	if !obs.Settled && equalConditions(shim.Status.Conditions, st.Conditions) {
		if next := r.statusPace.next(shim.Name, statusEvery); now.Before(next) {
			obs.Due = next
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
