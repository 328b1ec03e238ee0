package decide

import (
	"time"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// DriftGrace is how long after a node's installer finished its kubelet may
// still report the runtime handlers of before the restart (it refreshes
// node.status.runtimeHandlers with its status, every few seconds).
const DriftGrace = 30 * time.Second

// DetectDrift marks the node drifted when it is labelled as having the
// Shim at the rollout's target, no installer is running or just finished
// there, and its containerd no longer serves one of the Shim's handlers
// (the node was reimaged, or config management reverted containerd's
// config), or its last verification found the node unlike its install
// record (a file changed or gone: nodeverify.go). A drifted node is installed
// again under maxUpdate, like an upgrade; v.drifted says what drifted.
//
// A handler missing within driftGrace of the installer's end is not drift
// yet: it returns when to look again (zero: no need).
func (v *NodeView) DetectDrift(shim *v1alpha1.Shim, current string, now time.Time) (recheck time.Time) {
	v.Drifted = ""
	if v.Label != record.Installed || v.SpecHash != current || !v.Targeted() || v.Preinstalled {
		return time.Time{} // (a preinstalled node without a handler is skipped: unlabelled)
	}
	if f := v.Verified; f != nil && f.SpecHash == current && len(f.Drift) > 0 {
		v.Drifted = f.Drift[0]
		return time.Time{}
	}
	missing := nodeview.MissingHandler(v.Node, nodeview.HandlerNames(shim))
	if j := v.Job; j != nil && missing != "" {
		if j.Running() {
			return time.Time{}
		}
		if done := j.Object.Status.CompletionTime; done != nil && now.Sub(done.Time) < DriftGrace {
			return done.Add(DriftGrace)
		}
	}
	if missing != "" {
		v.Drifted = "handler " + missing + " is not served"
	}
	return time.Time{}
}
