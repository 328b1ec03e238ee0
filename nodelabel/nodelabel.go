package nodelabel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// Prefix is the label and annotation prefix of shimkit.
const Prefix = record.Prefix

// Installed is the label value of a node that has the shim.
const Installed = record.Installed

// Key returns the label (and annotation) key for a shim (record.Key).
func Key(shim string) string { return record.Key(shim) }

// State reads a node's state for a shim (record.State): whether it is
// labelled installed, and the spec hash it was installed at.
func State(node *corev1.Node, shim string) (installed bool, specHash string) {
	return record.State(node, shim)
}

// InstalledSelector selects the nodes labelled as having the shim.
func InstalledSelector(shim string) labels.Selector { return record.InstalledSelector(shim) }

// AnySelector selects the nodes carrying the shim's label with any value.
func AnySelector(shim string) labels.Selector { return record.AnySelector(shim) }

// Mark labels the node as having the shim at specHash, and records the
// install by the Shim object uid as the node's last verification
// (VerificationOf).
func Mark(ctx context.Context, c client.Client, node, shim string, uid types.UID, specHash string, opts ...Option) error {
	return patch(ctx, c, node, shim, Installed, specHash, Verification{ShimUID: uid}, opts)
}

// MarkOn is Mark on the machine the node is now, in its current boot
// (record.Machine and record.Boot of the Node as read): once the node is
// reimaged under its name, the label and the records are the old
// machine's (Records.Reimaged), and go; once it boots again, the Shim's
// operator verifies it again.
func MarkOn(ctx context.Context, c client.Client, node *corev1.Node, shim string, uid types.UID, specHash string, opts ...Option) error {
	return patch(ctx, c, node.Name, shim, Installed, specHash, Verification{ShimUID: uid, Machine: record.Machine(node), Boot: record.Boot(node)}, opts)
}

// SetState changes only the value of the shim's label, from the value
// the caller read (from) to state; for example to "uninstalling" so that
// a RuntimeClass selecting "installed" no longer schedules onto the node
// while the shim is removed. A node whose label is no longer from is left
// as it is: a state never brings back a label that an uninstall removed
// meanwhile (a JSON patch that tests the value, then replaces it). A
// scheduling label (WithSchedulingLabel) gets the state too.
func SetState(ctx context.Context, c client.Client, node, shim, from, state string, opts ...Option) error {
	path := "/metadata/labels/" + jsonPointerEscape(Key(shim))
	ops := []map[string]string{{"op": "test", "path": path, "value": from}, {"op": "replace", "path": path, "value": state}}
	if also := options(opts).scheduling; also != "" {
		ops = append(ops, map[string]string{"op": "add", "path": "/metadata/labels/" + jsonPointerEscape(also), "value": state})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	n := &corev1.Node{}
	n.Name = node
	err = c.Patch(ctx, n, client.RawPatch(types.JSONPatchType, body))
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return nil // the label is not from any more: nothing to change
	}
	if err != nil {
		return fmt.Errorf("patch node %s (%s=%s): %w", node, Key(shim), state, err)
	}
	return nil
}

// jsonPointerEscape escapes a map key for a JSON pointer (RFC 6901).
func jsonPointerEscape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// Unmark removes the shim's label and annotation from the node (nothing
// happens when they are not there), and any failure or verification
// recorded for it.
func Unmark(ctx context.Context, c client.Client, node, shim string, opts ...Option) error {
	return patch(ctx, c, node, shim, nil, nil, Verification{}, opts)
}

// patch sends a JSON merge patch of the label and annotation only; nil
// removes a key. The shim's failure record goes in the same request: a
// node that reached a state no longer has a failure.
func patch(ctx context.Context, c client.Client, node, shim string, label, annotation any, by Verification, opts []Option) error {
	k := Key(shim)
	var verified any // removed with the shim
	if spec, ok := annotation.(string); ok {
		verified = installedVerification(by, spec)
	}
	set := map[string]any{k: label} // the labels changed
	if also := options(opts).scheduling; also != "" {
		set[also] = label
	}
	return mergePatch(ctx, c, node, map[string]any{
		"labels":      set,
		"annotations": map[string]any{k: annotation, FailureKey(shim): nil, VerifiedKey(shim): verified},
	}, k)
}

// mergePatch sends a JSON merge patch of the node's metadata; what names
// the change in the error.
func mergePatch(ctx context.Context, c client.Client, node string, metadata map[string]any, what string) error {
	body, err := json.Marshal(map[string]any{"metadata": metadata})
	if err != nil {
		return err
	}
	n := &corev1.Node{}
	n.Name = node
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patch node %s (%s): %w", node, what, err)
	}
	return nil
}
