package record

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Prefix is the label and annotation prefix of shimkit.
const Prefix = "shim.containerd.x-k8s.io/"

// Installed is the label value of a node that has the shim.
const Installed = "installed"

// FailurePrefix is the annotation prefix of failure records.
const FailurePrefix = "failed." + Prefix

// maxName is the longest name part of a label key.
const maxName = 63

// Key returns the label (and annotation) key for a shim: the prefix and
// the shim name, shortened with a hash suffix when the name is too long.
func Key(shim string) string {
	if len(shim) <= maxName {
		return Prefix + shim
	}
	sum := sha256.Sum256([]byte(shim))
	suffix := hex.EncodeToString(sum[:])[:10]
	head := shim[:maxName-len(suffix)-1]
	for head != "" && !isAlnum(head[len(head)-1]) {
		head = head[:len(head)-1]
	}
	return Prefix + head + "-" + suffix
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z'
}

// FailureKey returns the annotation key of the shim's failure record on a
// node: failed.shim.containerd.x-k8s.io/<shim>.
func FailureKey(shim string) string { return "failed." + Key(shim) }

// VerifiedKey returns the annotation key of the shim's last verification
// on a node: verified.shim.containerd.x-k8s.io/<shim>.
func VerifiedKey(shim string) string { return "verified." + Key(shim) }

// State reads a node's state for a shim: whether it is labelled installed,
// and the spec hash it was installed at.
func State(node *corev1.Node, shim string) (installed bool, specHash string) {
	k := Key(shim)
	return node.Labels[k] == Installed, node.Annotations[k]
}

// InstalledSelector selects the nodes labelled as having the shim.
func InstalledSelector(shim string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{Key(shim): Installed})
}

// AnySelector selects the nodes carrying the shim's label with any value.
func AnySelector(shim string) labels.Selector {
	r, _ := labels.NewRequirement(Key(shim), selection.Exists, nil)
	return labels.NewSelector().Add(*r)
}

// HasAny reports whether the node carries anything of the shim: its label,
// its hash annotation, a failure or a verification record (parsed or not).
func HasAny(node *corev1.Node, shim string) bool {
	k := Key(shim)
	_, labelled := node.Labels[k]
	_, hash := node.Annotations[k]
	_, failed := node.Annotations[FailureKey(shim)]
	_, verified := node.Annotations[VerifiedKey(shim)]
	return labelled || hash || failed || verified
}
