package record

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Verification records when a node last had the shim checked against what
// its install recorded (the install itself counts), and what did not
// match. It lives on the Node, so that the verification period outlasts
// the installer's Jobs and the operator's restarts, and `kubectl describe
// node` shows it. It names the Shim object that installed or verified the
// node (ShimUID), and so tells whose the shim's label on the node is.
type Verification struct {
	// ShimUID is the UID of the Shim that installed or verified the node
	// (empty in records of before UIDs: taken as the current Shim's).
	ShimUID types.UID `json:"shimUID,omitempty"`
	// SpecHash is the spec the node was verified at.
	SpecHash string    `json:"specHash"`
	Time     time.Time `json:"time"`
	// Job names the verifying installer Job ("": the install), JobUID
	// tells its runs apart (a Job of the same name verifies every period).
	Job    string `json:"job,omitempty"`
	JobUID string `json:"jobUID,omitempty"`
	// Drift lists what did not match (empty: the node is as installed).
	Drift []string `json:"drift,omitempty"`
	// Machine is the node's identity when it was installed or verified
	// (Machine): on a node reimaged since (a new machine under the same
	// name), the record and the label it came with are the old machine's.
	Machine string `json:"machine,omitempty"`
	// Boot is the node's boot ID then (Boot): a node booted since may
	// have lost what was verified (a containerd config that its image or
	// config management writes anew at boot), and is verified again.
	Boot string `json:"boot,omitempty"`
}

// VerificationOf reads the verification record of the Shim named shim
// with the given UID on the node; nil when there is none, it does not
// parse (as one written by hand), or another Shim object of the same name
// wrote it. A record without a UID (written before records named their
// Shim) is taken as the Shim's: the label and hash it came with are.
func VerificationOf(node *corev1.Node, shim string, uid types.UID) *Verification {
	if v := verificationOf(node, shim); v.of(uid) && !OtherMachine(v.Machine, node) {
		return v
	}
	return nil
}

// of: the verification is the Shim object uid's, or names no Shim (it
// came with the label of then, which is taken as the Shim's).
func (v *Verification) of(uid types.UID) bool {
	return v != nil && (v.ShimUID == "" || v.ShimUID == uid)
}

func verificationOf(node *corev1.Node, shim string) *Verification {
	raw, ok := node.Annotations[VerifiedKey(shim)]
	if !ok {
		return nil
	}
	var v Verification
	if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Time.IsZero() {
		return nil
	}
	return &v
}
