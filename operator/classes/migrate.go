package classes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/shimspec"
	"github.com/shimkit/shimkit/runtimeclass"
)

// Reading runtime-class-manager's Shim, for its UID, when a RuntimeClass
// it controls is taken over.
//
// +kubebuilder:rbac:groups=runtime.spinkube.dev;runtime.kwasm.sh,resources=shims,verbs=get

// rcmShimUID reads the runtime-class-manager Shim's UID: empty when it is
// gone, its CRD is gone, or the operator may not read it (RBAC of an older
// deployment).
func (r *Classes) rcmShimUID(ctx context.Context, p runtimeclass.Predecessor) (types.UID, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(p.Group + "/" + shimspec.RCMVersion)
	u.SetKind(shimspec.RCMKind)
	err := r.reader.Get(ctx, client.ObjectKey{Name: p.Name}, u)
	switch {
	case err == nil:
		return u.GetUID(), nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || apierrors.IsForbidden(err):
		return "", nil
	}
	return "", fmt.Errorf("read %s: %w", p, err)
}

// ReadPredecessor reads the UID of the runtime-class-manager Shim that
// spec.migrateFrom names when one of the Shim's RuntimeClasses is
// controlled by a Shim of that name (empty otherwise, or when it cannot be
// read: rcmShimUID).
func (r *Classes) ReadPredecessor(ctx context.Context, obs *decide.Snapshot) (types.UID, error) {
	m := obs.Shim.Spec.MigrateFrom
	if m == nil {
		return "", nil
	}
	from := shimspec.RCMPredecessor(m)
	for _, spec := range shimspec.Classes(obs.Shim) {
		rc := &nodev1.RuntimeClass{}
		if err := r.classesOf(obs).Get(ctx, client.ObjectKey{Name: spec.Name}, rc); err == nil && from.Controls(rc) {
			return r.rcmShimUID(ctx, from)
		}
	}
	return "", nil
}

// TakeOver takes over, before anything else is done for the
// Shim, those of its RuntimeClasses that the runtime-class-manager Shim it
// replaces controls (runtimeclass.Takeover): from then on deleting that
// Shim does not delete them. It returns the message of each that is that
// Shim's but cannot be taken over (another handler), by name; any other
// RuntimeClass is left to Ensure.
func (r *Classes) TakeOver(ctx context.Context, obs *decide.Snapshot) (map[string]string, error) {
	m := obs.Shim.Spec.MigrateFrom
	if m == nil {
		return nil, nil
	}
	anyUID := shimspec.RCMPredecessor(m)
	from := anyUID
	from.UID = obs.RCMUID
	conflicts := map[string]string{}
	for _, spec := range shimspec.Classes(obs.Shim) {
		rc := &nodev1.RuntimeClass{}
		if err := r.classesOf(obs).Get(ctx, client.ObjectKey{Name: spec.Name}, rc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if !anyUID.Controls(rc) {
			continue // ours already, or someone else's: Ensure says which
		}
		res, err := runtimeclass.Takeover(ctx, r.classesOf(obs), spec.Spec, from)
		var conflict *runtimeclass.ConflictError
		switch {
		case errors.As(err, &conflict):
			msg := fmt.Sprintf("RuntimeClass %s (%s) is not taken over from %s, which spec.migrateFrom names: %s, not that Shim of UID %s; it is left as it is",
				spec.Name, spec.Field, from, conflict.Holder(), from.UID)
			if conflict.WantHandler != "" {
				msg = fmt.Sprintf("RuntimeClass %s (%s) is not taken over from %s, which spec.migrateFrom names: its handler is %s, not %s (a RuntimeClass's handler cannot change, and its pods run on it); it is left as it is",
					spec.Name, spec.Field, from, conflict.Handler, conflict.WantHandler)
			}
			conflicts[spec.Name] = msg
		case err != nil:
			return nil, err
		case res == runtimeclass.Retry:
			conflicts[spec.Name] = fmt.Sprintf("RuntimeClass %s (%s) is being taken over from %s: it changed meanwhile, retrying", spec.Name, spec.Field, from)
		case res == runtimeclass.TakenOver:
			log.FromContext(ctx).Info("RuntimeClass taken over", "runtimeClass", spec.Name, "from", from.String())
			r.event(obs.Shim, rc, corev1.EventTypeNormal, "RuntimeClassTakenOver", "Migrate",
				"RuntimeClass %s (handler %s) taken over from %s: deleting that Shim no longer deletes it", spec.Name, spec.Handler, from)
		}
	}
	return conflicts, nil
}

// ReleaseRCMLabels removes runtime-class-manager's label from the nodes
// this Shim is installed on (a merge patch that deletes only that key):
// runtime-class-manager no longer counts them as its own, and would not
// uninstall them when its Shim is deleted. A node keeps the label while
// shimkit has not installed it.
func (r *Classes) ReleaseRCMLabels(ctx context.Context, obs *decide.Snapshot) error {
	m := obs.Shim.Spec.MigrateFrom
	if m == nil {
		return nil
	}
	key := m.RuntimeClassManager.Shim
	g := r.group(ctx)
	for i := range obs.Views {
		v := &obs.Views[i]
		if v.Label != nodelabel.Installed || !shimspec.HasRCMLabel(v.Node, key) {
			continue
		}
		g.Go(func() error {
			if err := unlabelNode(ctx, r.client, v.Node.Name, key); err != nil {
				return err
			}
			r.event(obs.Shim, v.Node, corev1.EventTypeNormal, "Migrated", "Migrate", "node %s: runtime-class-manager's label %s=%s removed", v.Node.Name, key, v.Node.Labels[key])
			return nil
		})
	}
	return g.Wait()
}

// unlabelNode removes the label key from the node, nothing else.
func unlabelNode(ctx context.Context, c client.Client, node, key string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: nil}}})
	if err != nil {
		return err
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patch node %s (remove label %s): %w", node, key, err)
	}
	return nil
}
