package operator

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// driftGrace is how long after a node's installer finished its kubelet may
// still report the runtime handlers of before the restart (it refreshes
// node.status.runtimeHandlers with its status, every few seconds).
const driftGrace = 30 * time.Second

// handlerNames are the runtime handlers a node with the Shim serves.
func handlerNames(shim *v1alpha1.Shim) []string {
	out := []string{shim.Spec.RuntimeClass.HandlerName()}
	for _, h := range shim.Spec.Handlers {
		out = append(out, h.RuntimeClass.HandlerName())
	}
	return out
}

// missingHandler returns a handler of the Shim that the node's kubelet
// does not report (node.status.runtimeHandlers, from containerd's CRI
// status: containerd 2.0 and later, kubelet 1.30 and later), or "" when
// it reports them all or reports none (an older containerd or kubelet:
// nothing to tell from).
func missingHandler(node *corev1.Node, handlers []string) string {
	if len(node.Status.RuntimeHandlers) == 0 {
		return ""
	}
	for _, h := range handlers {
		if !slices.ContainsFunc(node.Status.RuntimeHandlers, func(r corev1.NodeRuntimeHandler) bool { return r.Name == h }) {
			return h
		}
	}
	return ""
}

// detectDrift marks the node drifted when it is labelled as having the
// Shim at the rollout's target, no installer is running or just finished
// there, and its containerd no longer serves one of the Shim's handlers
// (the node was reimaged, or config management reverted containerd's
// config), or its last verification found the node unlike its install
// record (a file changed or gone: nodeverify.go). A drifted node is installed
// again under maxUpdate, like an upgrade; v.drifted says what drifted.
//
// A handler missing within driftGrace of the installer's end is not drift
// yet: it returns when to look again (zero: no need).
func (v *nodeView) detectDrift(shim *v1alpha1.Shim, current string, now time.Time) (recheck time.Time) {
	v.drifted = ""
	if v.label != nodelabel.Installed || v.specHash != current || !v.targeted() {
		return time.Time{}
	}
	if f := v.verified; f != nil && f.SpecHash == current && len(f.Drift) > 0 {
		v.drifted = f.Drift[0]
		return time.Time{}
	}
	missing := missingHandler(v.node, handlerNames(shim))
	if j := v.job; j != nil && missing != "" {
		if j.running() {
			return time.Time{}
		}
		if done := j.job.Status.CompletionTime; done != nil && now.Sub(done.Time) < driftGrace {
			return done.Add(driftGrace)
		}
	}
	if missing != "" {
		v.drifted = "handler " + missing + " is not served"
	}
	return time.Time{}
}
