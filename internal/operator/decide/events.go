package decide

import (
	corev1 "k8s.io/api/core/v1"
)

// Notice is an Event about the Shim that the reconcile found while it
// read its snapshot (an artifact resolved anew, a revert) or that its
// plan decided (a node no plan could be built for, a tripped gate),
// related to a node (nil: the Shim alone): emitted once the decision is
// complete, as every Event is.
type Notice struct {
	Type, Reason, Action, Note string
	Node                       *corev1.Node
}
