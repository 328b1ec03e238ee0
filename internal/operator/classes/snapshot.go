package classes

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// classSnapshot is the RuntimeClasses a reconcile read, by name (nil:
// absent), as a client: its reads are served from what was read, its
// writes go to the API server and are remembered. runtimeclass's
// read-then-write steps (Ensure, Takeover, DeleteOwned) thus decide on the
// reconcile's snapshot, and a later step sees an earlier one's write (a
// takeover, then the update of the class taken over). Their writes keep
// their preconditions (the resourceVersion or UID read): a RuntimeClass
// changed since the snapshot is not overwritten, and the next reconcile
// reads it again.
type classSnapshot struct {
	client.Client
	set *decide.ClassSet
}

// classesOf is the snapshot's RuntimeClasses as a client.
func (r *Classes) classesOf(set *decide.ClassSet) *classSnapshot {
	return &classSnapshot{Client: r.client, set: set}
}

// Read reads the Shim's RuntimeClasses (those it labels, and every
// name its spec and canary give) from the cache. A name the cache shows as
// someone else's is read again from the API server: the cache may hold a
// copy from before the operator's own write (a takeover), and what the API
// server has decides, so that no conflict is reported for what was just
// done.
func (r *Classes) Read(ctx context.Context, shim *v1alpha1.Shim) (*decide.ClassSet, error) {
	s := &decide.ClassSet{}
	var list nodev1.RuntimeClassList
	if err := r.client.List(ctx, &list, client.MatchingLabels{jobview.LabelShim: jobview.LabelValue(shim.Name)}); err != nil {
		return nil, fmt.Errorf("list RuntimeClasses of Shim %s: %w", shim.Name, err)
	}
	for i := range list.Items {
		s.Put(list.Items[i].Name, &list.Items[i])
	}
	names := []string{shimspec.CanaryRuntimeClass(shim.Name)}
	for _, spec := range shimspec.Classes(shim) {
		names = append(names, spec.Name)
	}
	for _, name := range names {
		if _, ok := s.Read(name); ok || name == "" {
			continue
		}
		rc := &nodev1.RuntimeClass{}
		err := r.client.Get(ctx, client.ObjectKey{Name: name}, rc)
		if err == nil && !shimspec.OwnedBy(rc, shim) {
			rc = &nodev1.RuntimeClass{}
			err = r.reader.Get(ctx, client.ObjectKey{Name: name}, rc)
		}
		switch {
		case apierrors.IsNotFound(err):
			s.Put(name, nil)
		case err != nil:
			return nil, fmt.Errorf("get RuntimeClass %s: %w", name, err)
		default:
			s.Put(name, rc)
		}
	}
	return s, nil
}

// Get serves a RuntimeClass of the snapshot; one the reconcile did not
// read is an error (a decision must not depend on a read made after it).
func (s *classSnapshot) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	out, ok := obj.(*nodev1.RuntimeClass)
	if !ok {
		return fmt.Errorf("RuntimeClass snapshot: cannot read a %T", obj)
	}
	rc, read := s.set.Read(key.Name)
	switch {
	case !read:
		return fmt.Errorf("RuntimeClass %s was not read by this reconcile", key.Name)
	case rc == nil:
		return apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), key.Name)
	}
	rc.DeepCopyInto(out)
	return nil
}

func (s *classSnapshot) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := s.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	s.remember(obj)
	return nil
}

func (s *classSnapshot) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := s.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	s.remember(obj)
	return nil
}

func (s *classSnapshot) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := s.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	s.set.Put(obj.GetName(), nil)
	return nil
}

func (s *classSnapshot) remember(obj client.Object) {
	if rc, ok := obj.(*nodev1.RuntimeClass); ok {
		s.set.Put(rc.Name, rc.DeepCopy())
	}
}
