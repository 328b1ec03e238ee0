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
	// Unrecorded: the shim's label says installed with no verification
	// record beside it. A Shim writes both at once (nodelabel.Mark), so
	// the label is someone else's: a node pool's declaration (a Karpenter
	// NodePool's labels, a MachineDeployment's), an admin's copy. It is
	// never taken as an install: the node has the shim at an unknown
	// spec, if at all, and is installed (the installer changes nothing
	// on a node that already has it).
	Unrecorded bool
	// Reimaged: the shim's label and its verification were recorded on
	// another machine under the node's name (a node reimaged in place:
	// its machine ID changed). The node no longer has the shim: its label
	// goes at once, and it is installed again.
	Reimaged bool
}

// Machine is a node's identity as its kubelet reports it: the machine ID,
// or the system UUID where the machine ID is empty ("": neither). A node
// reimaged in place keeps its name and gets a new machine ID.
func Machine(node *corev1.Node) string {
	if id := node.Status.NodeInfo.MachineID; id != "" {
		return id
	}
	return node.Status.NodeInfo.SystemUUID
}

// Boot is the boot ID the node's kubelet reports (status.nodeInfo.bootID;
// "": none): it changes with every boot of the machine.
func Boot(node *corev1.Node) string { return node.Status.NodeInfo.BootID }

// Rebooted: a record made on the node's machine in an earlier boot than
// its current one. A record naming no boot, or a node reporting none, is
// taken as of this boot.
func Rebooted(recorded string, node *corev1.Node) bool {
	b := Boot(node)
	return recorded != "" && b != "" && recorded != b
}

// OtherMachine: a record (or Job) made for a machine other than the
// node's now, Machine(node): a reimage under the node's name. A record
// naming none, or a node reporting none, is taken as the node's.
func OtherMachine(recorded string, node *corev1.Node) bool {
	m := Machine(node)
	return recorded != "" && m != "" && recorded != m
}

// RecordsOf reads the records of the Shim named shim with the given UID
// on the node. Records of another machine (Machine) are stale, whoever
// wrote them.
func RecordsOf(node *corev1.Node, shim string, uid types.UID) Records {
	var r Records
	if f := failureOf(node, shim); f.of(uid) && !OtherMachine(f.Machine, node) {
		r.Failure = f
	} else if f != nil {
		r.Stale = append(r.Stale, FailureKey(shim))
	}
	v := verificationOf(node, shim)
	label, labelled := node.Labels[Key(shim)]
	switch {
	case v == nil:
		r.Unrecorded = label == Installed
	case OtherMachine(v.Machine, node):
		r.Reimaged = labelled
		r.Stale = append(r.Stale, VerifiedKey(shim))
	case v.of(uid):
		r.Verification = v
	case labelled:
		// It tells whose the label is until the Shim installs the node
		// again and nodelabel.Mark replaces it.
		r.LabelledByOther = true
	default:
		r.Stale = append(r.Stale, VerifiedKey(shim))
	}
	return r
}
