package decide

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// RevertTarget is the revision the reconcile goes back to: the one
// status.rollout.revertedTo names, when the status says the rollout of
// the current target failed and goes back, and the Shim is not being
// deleted (nil: none).
func RevertTarget(obs *Snapshot) *v1alpha1.Revision {
	st := obs.Shim.Status.Rollout
	if st == nil || st.RevertedTo == "" || st.SpecHash != obs.Hash || !obs.Shim.DeletionTimestamp.IsZero() {
		return nil
	}
	for i := range obs.Shim.Status.Revisions {
		if rev := &obs.Shim.Status.Revisions[i]; rev.SpecHash == st.RevertedTo && rev.SpecHash != obs.Hash {
			return rev
		}
	}
	return nil
}

// RevisionRead is a revision as observe read it back (its
// ControllerRevision): the spec and the artifact pinned for it, or Gone
// when the ControllerRevision is not there (with the error that said so).
type RevisionRead struct {
	Revision v1alpha1.Revision
	Spec     v1alpha1.ShimSpec
	Artifact *v1alpha1.ResolvedArtifact
	Gone     error
}

// Revert makes the revision read the target of the snapshot it is being
// built into (obs; rev nil: RevertTarget named none): its spec, with the
// current rollout strategy, and its pinned artifact. A revision gone
// leaves the target as it is (the rollout stays halted), with a Warning
// Event among the snapshot's notices. The views are built after it, for
// the target it leaves.
func Revert(obs *Snapshot, rev *RevisionRead) {
	switch {
	case rev == nil:
		return
	case rev.Gone != nil:
		obs.Notices = append(obs.Notices, Notice{Type: corev1.EventTypeWarning, Reason: "RevertFailed", Action: "Revert",
			Note: fmt.Sprintf("%v: the rollout stays halted", rev.Gone)})
		return
	}
	prev := obs.Shim.DeepCopy()
	prev.Spec = *rev.Spec.DeepCopy()
	prev.Spec.RolloutStrategy = obs.Shim.Spec.RolloutStrategy
	obs.Reverted = obs.Hash
	obs.Shim, obs.Art, obs.Shown, obs.Hash, obs.SpecHash = prev, rev.Artifact, rev.Artifact, rev.Revision.SpecHash, nodeview.SpecHash(prev)
}
