package classes

import (
	"context"
	"encoding/json"
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

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
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
		if err := r.classesOf(obs.Classes).Get(ctx, client.ObjectKey{Name: spec.Name}, rc); err == nil && from.Controls(rc) {
			return r.rcmShimUID(ctx, from)
		}
	}
	return "", nil
}

// TakeOver writes the plan's takeovers (decide.Classes), before anything
// else is done for the Shim: from then on deleting the
// runtime-class-manager Shim that spec.migrateFrom names does not delete
// them. A class that changed since it was read is not taken over
// (conflict: the plan's status, which counts it taken over, is not
// written; the next reconcile reads it again).
func (r *Classes) TakeOver(ctx context.Context, shim *v1alpha1.Shim, set *decide.ClassSet, p decide.ClassPlan) (conflict bool, _ error) {
	for _, t := range p.Takeovers {
		res, err := runtimeclass.Apply(ctx, r.client, t.Step)
		if err != nil {
			return conflict, err
		}
		spec, from := t.Spec, t.Step.From
		if res == runtimeclass.Retry {
			log.FromContext(ctx).Info("RuntimeClass changed while taken over: retrying", "runtimeClass", spec.Name, "from", from.String())
			conflict = true
			continue
		}
		set.Put(spec.Name, t.Step.Write)
		log.FromContext(ctx).Info("RuntimeClass taken over", "runtimeClass", spec.Name, "from", from.String())
		r.recorder.Say(ctx, shim, t.Said)
	}
	return conflict, nil
}

// ReleaseRCMLabels removes runtime-class-manager's label from the nodes
// the plan releases (decide.RCMReleases: those this Shim is installed on),
// a merge patch that deletes only that key: runtime-class-manager no
// longer counts them as its own, and would not uninstall them when its
// Shim is deleted.
func (r *Classes) ReleaseRCMLabels(ctx context.Context, obs *decide.Snapshot, releases []decide.RCMRelease) error {
	g := r.group(ctx)
	for _, rel := range releases {
		g.Go(func() error {
			if err := unlabelNode(ctx, r.client, rel.Node.Name, rel.Key); err != nil {
				return err
			}
			r.recorder.Say(ctx, obs.Shim, rel.Said)
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
