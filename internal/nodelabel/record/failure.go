package record

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Failure records why the last operation of a shim failed on a node. It
// lives on the Node, so that it outlives the installer's Job (garbage
// collected after its TTL) and the operator's restarts: a node that
// failed stays failed, and its rollout halted, until the spec changes or
// an admin asks for a retry. It belongs to the Shim object that recorded
// it (ShimUID): a Shim deleted and created again under the same name does
// not inherit it.
type Failure struct {
	// ShimUID is the UID of the Shim whose operation failed.
	ShimUID types.UID `json:"shimUID,omitempty"`
	// Op is the operation that failed: install or uninstall.
	Op string `json:"op"`
	// SpecHash is the spec the operation was for.
	SpecHash string `json:"specHash,omitempty"`
	Reason   string `json:"reason"`
	Message  string `json:"message,omitempty"`
	// Canary identifies the canary settings a CanaryFailed install ran
	// with (the operator's hash of them): the node is tried again when
	// they change.
	Canary string `json:"canary,omitempty"`
	// Job names the installer Job that failed.
	Job  string    `json:"job,omitempty"`
	Time time.Time `json:"time"`
	// Machine is the node's identity when it failed (Machine): a node
	// reimaged since is another machine, and the record is dropped.
	Machine string `json:"machine,omitempty"`
}

// FailureOf reads the failure record of the Shim named shim with the
// given UID on the node; nil when there is none, it does not parse (as
// one written by hand), or it is another Shim object's: a predecessor of
// the same name's, or one recorded before records named their Shim's UID
// (RecordsOf lists those as stale).
func FailureOf(node *corev1.Node, shim string, uid types.UID) *Failure {
	if f := failureOf(node, shim); f.of(uid) && !OtherMachine(f.Machine, node) {
		return f
	}
	return nil
}

// of: the failure is the Shim object uid's (one naming no Shim is not:
// it cannot be told from a predecessor's).
func (f *Failure) of(uid types.UID) bool { return f != nil && f.ShimUID == uid }

func failureOf(node *corev1.Node, shim string) *Failure {
	v, ok := node.Annotations[FailureKey(shim)]
	if !ok {
		return nil
	}
	var f Failure
	if err := json.Unmarshal([]byte(v), &f); err != nil || f.Op == "" {
		return nil
	}
	return &f
}
