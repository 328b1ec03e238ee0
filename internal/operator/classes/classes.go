package classes

import (
	"context"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Classes reads a Shim's RuntimeClasses into a reconcile's snapshot and
// writes them: the migration's takeover from runtime-class-manager, the
// classes the spec names (the canary's among them), and their deletion.
type Classes struct {
	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
}

// New returns the Classes of an operator: c writes and serves cached
// reads, reader reads what the cache must not serve (the API server), and
// recorder records Events (nil: none).
func New(c client.Client, reader client.Reader, recorder events.EventRecorder) *Classes {
	return &Classes{client: c, reader: reader, recorder: recorder}
}

func (r *Classes) event(shim *v1alpha1.Shim, related runtime.Object, eventType, reason, action, note string, args ...any) {
	if r.recorder != nil {
		r.recorder.Eventf(shim, related, eventType, reason, action, note, args...)
	}
}

// group runs one write per node a few at a time.
func (r *Classes) group(ctx context.Context) *errgroup.Group {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(64)
	return g
}
