package record

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What a Shim leaves on a node (its label, the hash annotation, its failure
// and verification records) is keyed by the Shim's name, and the records
// name the Shim object (its UID) that wrote them. A Shim deleted and
// created again under the same name is another object: it does not
// inherit its predecessor's failure, verification or label.

// Records is what a Shim object finds of its own on a node, read once.
type Records struct {
	// Failure and Verification are the Shim's records (FailureOf,
	// VerificationOf): nil when absent or another Shim object's.
	Failure      *Failure
	Verification *Verification
	// Stale are the keys of the failure and verification records that
	// are not the Shim's: another object's of the same name, or a failure
	// that names no Shim (recorded before records did, it cannot be told
	// from a predecessor's). nodelabel.DropRecords removes them. (A
	// verification that came with a predecessor's label is not stale: it
	// says whose the label is, until the next install replaces both.)
	Stale []string
	// LabelledByOther: the shim's label was put there by another Shim
	// object of the same name (one deleted without its nodes being
	// cleaned): the verification record that came with it names another
	// UID. The node has the shim at an unknown spec.
	LabelledByOther bool
}

// RecordsOf reads the records of the Shim named shim with the given UID
// on the node.
func RecordsOf(node *corev1.Node, shim string, uid types.UID) Records {
	var r Records
	if f := failureOf(node, shim); f.of(uid) {
		r.Failure = f
	} else if f != nil {
		r.Stale = append(r.Stale, FailureKey(shim))
	}
	if v := verificationOf(node, shim); v != nil {
		_, labelled := node.Labels[Key(shim)]
		switch {
		case v.of(uid):
			r.Verification = v
		case labelled:
			// It tells whose the label is until the Shim installs the node
			// again and nodelabel.Mark replaces it.
			r.LabelledByOther = true
		default:
			r.Stale = append(r.Stale, VerifiedKey(shim))
		}
	}
	return r
}
