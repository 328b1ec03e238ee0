package nodelabel

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// FailurePrefix is the annotation prefix of failure records.
const FailurePrefix = record.FailurePrefix

// FailureKey returns the annotation key of the shim's failure record on a
// node (record.FailureKey).
func FailureKey(shim string) string { return record.FailureKey(shim) }

// Failure records why the last operation of a shim failed on a node
// (record.Failure). MarkFailed writes it; Mark and Unmark remove it.
type Failure = record.Failure

// maxFailureMessage bounds the message kept on the node.
const maxFailureMessage = 512

// FailureOf reads the failure record of the Shim named shim with the
// given UID on the node (record.FailureOf).
func FailureOf(node *corev1.Node, shim string, uid types.UID) *Failure {
	return record.FailureOf(node, shim, uid)
}

// MarkFailed records f as the shim's failure on the node (f.ShimUID
// names the Shim object it belongs to).
func MarkFailed(ctx context.Context, c client.Client, node, shim string, f Failure) error {
	if len(f.Message) > maxFailureMessage {
		f.Message = f.Message[:maxFailureMessage] + "…"
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return patchFailure(ctx, c, node, shim, string(data))
}

// ClearFailure removes the shim's failure record from the node (a retry).
func ClearFailure(ctx context.Context, c client.Client, node, shim string) error {
	return patchFailure(ctx, c, node, shim, nil)
}

func patchFailure(ctx context.Context, c client.Client, node, shim string, value any) error {
	return mergePatch(ctx, c, node, map[string]any{"annotations": map[string]any{FailureKey(shim): value}}, FailureKey(shim))
}
