package status

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Update writes the status the plan leaves (decide.StatusPlan) with
// server-side apply (field owner shimkit): first the revision it records,
// then the metrics, then the status when the plan writes it now (else
// the plan's requeue brings the Shim back at sp.Due).
func (r *Reporter) Update(ctx context.Context, obs *decide.Snapshot, sp decide.StatusPlan) error {
	shim := obs.Shim
	if err := r.revisions.Record(ctx, obs, sp.Revision, sp.Drop); err != nil {
		return err
	}
	r.metrics.Observe(shim, sp.Status, sp.Ready)
	r.metrics.Conditions(shim.Name, sp.Status.Conditions)
	if !sp.Write {
		return nil
	}
	obj, err := statusApply(shim, sp.Status)
	if err != nil {
		return err
	}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("status of Shim %s: %w", shim.Name, err)
	}
	r.statusPace.wrote(shim.Name, time.Now())
	return nil
}

// LastWritten is when the Shim's status was last written (zero: not
// since the operator started): a snapshot reads it, and its plan paces
// the status by it.
func (r *Reporter) LastWritten(name string) time.Time {
	return r.statusPace.next(name, 0)
}

// pace remembers when something of each Shim was last written (its
// status, its gathered events), so that it is written at most so often.
type pace struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// next is when the shim's may be written again, every after the last.
func (p *pace) next(shim string, every time.Duration) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last[shim].Add(every)
}

func (p *pace) wrote(shim string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]time.Time{}
	}
	p.last[shim] = at
}

func (p *pace) forget(shim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, shim)
}

const fieldOwner = "shimkit"

// statusApply is the apply request for the status subresource.
func statusApply(shim *v1alpha1.Shim, st v1alpha1.ShimStatus) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.Shim{Status: st})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": obj["status"]}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("Shim")
	u.SetName(shim.Name)
	return u, nil
}
