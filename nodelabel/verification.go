package nodelabel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// VerifiedKey returns the annotation key of the shim's last verification
// on a node (record.VerifiedKey).
func VerifiedKey(shim string) string { return record.VerifiedKey(shim) }

// Verification records when a node last had the shim checked
// (record.Verification). Mark writes it, MarkVerified after a verifying
// Job, Unmark removes it.
type Verification = record.Verification

// maxDrift bounds the mismatches kept on the node.
const maxDrift = 5

// VerificationOf reads the verification record of the Shim named shim
// with the given UID on the node (record.VerificationOf).
func VerificationOf(node *corev1.Node, shim string, uid types.UID) *Verification {
	return record.VerificationOf(node, shim, uid)
}

// MarkVerified records v as the shim's last verification on the node.
func MarkVerified(ctx context.Context, c client.Client, node, shim string, v Verification) error {
	if len(v.Drift) > maxDrift {
		v.Drift = append(v.Drift[:maxDrift:maxDrift], fmt.Sprintf("and %d more", len(v.Drift)-maxDrift))
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return mergePatch(ctx, c, node, map[string]any{"annotations": map[string]any{VerifiedKey(shim): string(data)}}, VerifiedKey(shim))
}

// installedVerification is what Mark records: the install of the Shim
// (by.ShimUID, on by.Machine) verified the node at its spec, now.
func installedVerification(by Verification, specHash string) string {
	by.SpecHash, by.Time = specHash, time.Now().UTC().Truncate(time.Second)
	data, _ := json.Marshal(by)
	return string(data)
}
