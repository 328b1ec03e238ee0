package results

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// LogMaxBytes bounds a copy: the end of the log, where a failure is told.
const LogMaxBytes = 64 << 10

// The copy's key, labels and annotations.
const (
	LogKey              = "installer.log"
	LogLabelKind        = "shim.containerd.x-k8s.io/log"
	LogAnnotationJob    = "shim.containerd.x-k8s.io/job"
	LogAnnotationReason = "shim.containerd.x-k8s.io/reason"
	LogAnnotationTime   = "shim.containerd.x-k8s.io/time"
)

// LogFieldOwner is the field manager of the copies.
const LogFieldOwner = "shimkit-operator"

// LogCopy is a kept log: of which Job, why it failed, when it was kept.
type LogCopy struct {
	Job, Reason string
	Time        time.Time
	Log         string
}

// LogName is the ConfigMap of the shim's copy for the node.
func LogName(shim, node string) string {
	sum := sha256.Sum256([]byte(shim + "\x00" + node))
	return "shimkit-log-" + hex.EncodeToString(sum[:10])
}

// LogTail is the end of log within LogMaxBytes, from a line's start, with a
// first line that says how much was left out.
func LogTail(log []byte) []byte {
	if len(log) <= LogMaxBytes {
		return log
	}
	cut := log[len(log)-LogMaxBytes+128:]
	if i := bytes.IndexByte(cut, '\n'); i >= 0 {
		cut = cut[i+1:]
	}
	head := fmt.Appendf(nil, "(the first %d bytes of the log are left out)\n", len(log)-len(cut))
	return append(head, cut...)
}

// KeepLog writes the copy of a failed Job's log for the shim on the node
// (replacing the node's earlier one), by server-side apply: nothing is
// read first.
func KeepLog(ctx context.Context, c client.Client, namespace string, shim *v1alpha1.Shim, node string, cp LogCopy) error {
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LogName(shim.Name, node),
			Labels: map[string]string{LogLabelKind: "installer", jobview.LabelManagedBy: jobview.ManagedBy,
				jobview.LabelShim: jobview.LabelValue(shim.Name), jobview.LabelNode: jobview.LabelValue(node)},
			Annotations:     map[string]string{LogAnnotationJob: cp.Job, LogAnnotationReason: cp.Reason, LogAnnotationTime: cp.Time.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim"))}},
		Data: map[string]string{LogKey: string(LogTail([]byte(cp.Log)))},
	}
	if err := c.Patch(ctx, cm, client.Apply, client.FieldOwner(LogFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("log copy %s/%s of node %s: %w", namespace, cm.Name, node, err)
	}
	return nil
}

// ReadLog returns the shim's copy for the node (nil: none, or not the
// Shim's).
func ReadLog(ctx context.Context, c client.Reader, namespace string, shim *v1alpha1.Shim, node string) (*LogCopy, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LogName(shim.Name, node)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("log copy of node %s: %w", node, err)
	case !metav1.IsControlledBy(cm, shim):
		return nil, nil
	}
	at, _ := time.Parse(time.RFC3339, cm.Annotations[LogAnnotationTime])
	return &LogCopy{Job: cm.Annotations[LogAnnotationJob], Reason: cm.Annotations[LogAnnotationReason], Time: at, Log: cm.Data[LogKey]}, nil
}
