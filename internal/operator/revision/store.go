package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;create;delete,namespace=shimkit-system

// Store keeps a Shim's revisions: each target rolled out to every node,
// as a ControllerRevision of the Shim in the operator's namespace (owned
// by the Shim, so it goes with it), listed in the status, newest first,
// and read back when a failed rollout reverts.
type Store struct {
	client    client.Client
	reader    client.Reader
	namespace string
}

// New returns the Store of an operator whose namespace is namespace: c
// writes, and reader reads what the cache does not hold (the API server).
func New(c client.Client, reader client.Reader, namespace string) *Store {
	return &Store{client: c, reader: reader, namespace: namespace}
}

// Data is what a Shim's ControllerRevision holds: the spec and
// the artifact pinned for it, all a node needs to install that revision
// again.
type Data struct {
	Spec     v1alpha1.ShimSpec          `json:"spec"`
	Artifact *v1alpha1.ResolvedArtifact `json:"artifact,omitempty"`
}

// Record writes the revision the plan records (decide.StatusPlan): a
// ControllerRevision of the Shim (owned by it, so it goes with it) holding
// its spec and pinned artifact, before the status lists it first; the
// ControllerRevisions of the revisions dropped go (drop; each only when
// it is the Shim's, as read).
func (r *Store) Record(ctx context.Context, obs *decide.Snapshot, rev *v1alpha1.Revision, drop []string) error {
	if rev != nil {
		if err := r.create(ctx, obs, rev); err != nil {
			return err
		}
	}
	for _, name := range drop {
		if err := r.deleteRevision(ctx, obs, name); err != nil {
			return err
		}
	}
	return nil
}

func (r *Store) create(ctx context.Context, obs *decide.Snapshot, rev *v1alpha1.Revision) error {
	data, err := json.Marshal(Data{Spec: obs.Shim.Spec, Artifact: obs.Art})
	if err != nil {
		return err
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: rev.ControllerRevision, Namespace: r.namespace,
			Labels:          map[string]string{jobview.LabelShim: jobview.LabelValue(obs.Shim.Name), jobview.LabelManagedBy: jobview.ManagedBy},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(obs.Shim, v1alpha1.GroupVersion.WithKind("Shim"))},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: obs.RolloutNow.Unix(),
	}
	if err := r.client.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shim %s: record revision %s: %w", obs.Shim.Name, cr.Name, err)
	}
	return nil
}

// ReadDroppable reads the ControllerRevisions that recording the target
// as a new revision would drop (those beyond the newest decide.MaxRevisions-1),
// so that the reconcile deletes only the Shim's own, by UID, without a
// read. A target recorded already, or a revert's, records nothing: no
// read (a rolled-out Shim's reconciles read no revision).
func (r *Store) ReadDroppable(ctx context.Context, obs *decide.Snapshot) error {
	revs := obs.Shim.Status.Revisions
	if obs.Reverted != "" || len(revs) > 0 && revs[0].SpecHash == obs.Hash {
		return nil // the target is recorded already (or is not recorded: a revert)
	}
	for _, old := range revs[min(len(revs), decide.MaxRevisions-1):] {
		cr := &appsv1.ControllerRevision{}
		err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: old.ControllerRevision}, cr)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("shim %s: revision %s: %w", obs.Shim.Name, old.ControllerRevision, err)
		}
		if obs.Droppable == nil {
			obs.Droppable = map[string]*appsv1.ControllerRevision{}
		}
		obs.Droppable[cr.Name] = cr
	}
	return nil
}

// deleteRevision deletes a ControllerRevision the Shim owns, as read
// (ReadDroppable; another's of the name is left alone).
func (r *Store) deleteRevision(ctx context.Context, obs *decide.Snapshot, name string) error {
	cr := obs.Droppable[name]
	if cr == nil || !ownedBy(cr, obs.Shim) {
		return nil
	}
	err := r.client.Delete(ctx, cr, client.Preconditions{UID: &cr.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("shim %s: delete revision %s: %w", obs.Shim.Name, name, err)
	}
	return nil
}

// loadRevision reads a revision's spec and pinned artifact back from its
// ControllerRevision, which must be the Shim's.
func (r *Store) loadRevision(ctx context.Context, shim *v1alpha1.Shim, rev v1alpha1.Revision) (*Data, error) {
	return Load(ctx, r.reader, r.namespace, shim, rev)
}

// Load reads a revision of the Shim from its ControllerRevision in the
// operator's namespace, refusing one that is not the Shim's (by UID).
func Load(ctx context.Context, reader client.Reader, namespace string, shim *v1alpha1.Shim, rev v1alpha1.Revision) (*Data, error) {
	cr := &appsv1.ControllerRevision{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: rev.ControllerRevision}, cr); err != nil {
		return nil, fmt.Errorf("shim %s: revision %s: %w", shim.Name, rev.ControllerRevision, err)
	}
	if !ownedBy(cr, shim) {
		return nil, fmt.Errorf("shim %s: revision %s belongs to another object", shim.Name, rev.ControllerRevision)
	}
	data := &Data{}
	if err := json.Unmarshal(cr.Data.Raw, data); err != nil {
		return nil, fmt.Errorf("shim %s: revision %s: %w", shim.Name, rev.ControllerRevision, err)
	}
	return data, nil
}

// ReadRevert reads back the revision a revert goes to
// (decide.RevertTarget; nil: none): decide.Revert makes it the target. A
// ControllerRevision that is not there is read as gone, not as an error.
func (r *Store) ReadRevert(ctx context.Context, obs *decide.Snapshot) (*decide.RevisionRead, error) {
	rev := decide.RevertTarget(obs)
	if rev == nil {
		return nil, nil
	}
	read := &decide.RevisionRead{Revision: *rev}
	data, err := r.loadRevision(ctx, obs.Shim, *rev)
	switch {
	case apierrors.IsNotFound(err):
		read.Gone = err
	case err != nil:
		return nil, err
	default:
		read.Spec, read.Artifact = data.Spec, data.Artifact
	}
	return read, nil
}

// ownedBy: the ControllerRevision is the Shim's (this object's, by UID).
func ownedBy(cr *appsv1.ControllerRevision, shim *v1alpha1.Shim) bool {
	return slices.ContainsFunc(cr.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == shim.UID })
}
