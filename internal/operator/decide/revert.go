package decide

import "github.com/shimkit/shimkit/operator/api/v1alpha1"

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
