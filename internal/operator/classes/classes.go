package classes

import (
	"context"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/phase"
)

// Classes reads a Shim's RuntimeClasses into a reconcile's snapshot and
// writes them: the migration's takeover from runtime-class-manager, the
// classes the spec names (the canary's among them), and their deletion.
type Classes struct {
	client   client.Client
	reader   client.Reader
	recorder *phase.Recorder
}

// New returns the Classes of an operator: c writes and serves cached
// reads, reader reads what the cache must not serve (the API server), and
// recorder records Events (nil: none).
func New(c client.Client, reader client.Reader, recorder *phase.Recorder) *Classes {
	return &Classes{client: c, reader: reader, recorder: recorder}
}

// group runs one write per node a few at a time.
func (r *Classes) group(ctx context.Context) *errgroup.Group {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(64)
	return g
}
