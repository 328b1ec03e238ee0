package nodelabel

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// Records is what a Shim object finds of its own on a node, read once
// (record.Records).
type Records = record.Records

// RecordsOf reads the records of the Shim named shim with the given UID
// on the node (record.RecordsOf).
func RecordsOf(node *corev1.Node, shim string, uid types.UID) Records {
	return record.RecordsOf(node, shim, uid)
}

// HasAny reports whether the node carries anything of the shim
// (record.HasAny).
func HasAny(node *corev1.Node, shim string) bool { return record.HasAny(node, shim) }

// DropRecords removes the annotations keys (as StaleRecords returns) from
// the node, in one merge patch.
func DropRecords(ctx context.Context, c client.Client, node string, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	drop := make(map[string]any, len(keys))
	for _, k := range keys {
		drop[k] = nil
	}
	return mergePatch(ctx, c, node, map[string]any{"annotations": drop}, "stale records")
}
