package operator

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// world is what is read of a Shim's cluster before its snapshot is
// built: the objects, and what the operator remembers of the Shim that
// its status may not show yet. A reconcile reads it from the cache and
// the operator's memory; a preview is given the objects and remembers
// nothing (the status stands in, as it does for an operator that just
// started).
type world struct {
	Shim            *v1alpha1.Shim
	Nodes           []*corev1.Node
	Jobs            []*batchv1.Job
	Shims           []v1alpha1.Shim
	Now, RolloutNow time.Time
	// Retried and RetriedHash: the retry the operator acted on since the
	// status it read (""; the status's).
	Retried, RetriedHash string
	// Gate and Held: the node gate as read, and the nodes whose
	// installers it holds (by node, the Job's name).
	Gate nodegate.View
	Held map[string]string
	// Deleted: a Job the operator deleted (the cache may not know yet).
	Deleted                      func(*v1alpha1.Shim, types.UID) bool
	StatusWritten, EventsEmitted time.Time
	// EventsHeld: notes of earlier reconciles are held back.
	EventsHeld bool
	// Result: a Job's installer result read before (nil: none read).
	Result func(*jobview.View) (*plan.NodeResult, bool)
}

// The reads a snapshot makes while it is built, by role. A reconcile's
// ask the registry and the API server; a preview's take what the Shim's
// status and the objects it is given say.
type (
	// pinning is the artifact the target pins (pin.Pinner for a
	// reconcile, the status's pin for a preview).
	pinning interface {
		pinFor(ctx context.Context, obs *observed) pin.Pinned
	}
	// reverting reads back the revision a revert goes to
	// (decide.RevertTarget; nil: none).
	reverting interface {
		ReadRevert(ctx context.Context, obs *observed) (*decide.RevisionRead, error)
	}
	// viewReading reads what the built views call for: the results of
	// finished Jobs, the RuntimeClasses, the pods a removal waits for,
	// the health gate's failures.
	viewReading interface {
		readViews(ctx context.Context, obs *observed, attached map[types.UID]bool) error
	}
)

// sources are the three reads of a snapshot.
type sources struct {
	pin    pinning
	revert reverting
	views  viewReading
}

// observe builds the snapshot of the world: the one way a reconcile and
// a preview (kubectl shimkit plan) see a Shim's cluster, under the same
// Options. In order: the snapshot's head (the spec, its refusal, the
// status's retry, or the one remembered), the pinned artifact, a
// revert's target (decide.Revert), the node views (decide.BuildViews),
// then what the views call for.
func observe(ctx context.Context, w world, src sources, opts Options) (*observed, error) {
	obs := decide.NewSnapshot(w.Shim, opts.settings(), w.Now, w.RolloutNow)
	if w.Retried != "" {
		obs.Retried, obs.RetriedHash = w.Retried, w.RetriedHash
	}
	obs.Jobs, obs.Shims, obs.Gate = w.Jobs, w.Shims, w.Gate
	if obs.Refusal == nil {
		obs.Refusal = shimspec.SchedulingRefusal(w.Shim, w.Shims)
	}
	obs.StatusWritten, obs.EventsEmitted, obs.EventsHeld = w.StatusWritten, w.EventsEmitted, w.EventsHeld
	pinned := src.pin.pinFor(ctx, obs)
	obs.Shown, obs.Notices = pinned.Show, append(obs.Notices, pinned.Notices...)
	if pinned.Refusal != nil {
		obs.Refusal = pinned.Refusal
	}
	obs.Aim(pinned.Use)
	rev, err := src.revert.ReadRevert(ctx, obs)
	if err != nil {
		return nil, err
	}
	decide.Revert(obs, rev)
	attached := decide.BuildViews(obs, decide.NodeReads{Nodes: w.Nodes, Jobs: w.Jobs, Deleted: w.Deleted, Held: w.Held,
		ServerVersion: opts.ServerVersion, Result: w.Result})
	if err := src.views.readViews(ctx, obs, attached); err != nil {
		return nil, err
	}
	return obs, nil
}

// statusPin is a preview's pinning: the artifact the status pinned for
// the spec (none: the spec is not pinned yet), no resolution; the status
// shows what it shows.
type statusPin struct{}

func (statusPin) pinFor(_ context.Context, obs *observed) pin.Pinned {
	return pin.Pinned{Use: shimspec.PinOf(obs.Shim, obs.SpecHash), Show: obs.Shown}
}

// noRevert is a preview's reverting: it reads no revision back (the
// target stays the spec).
type noRevert struct{}

func (noRevert) ReadRevert(context.Context, *observed) (*decide.RevisionRead, error) { return nil, nil }

// previewReads is a preview's viewReading: the RuntimeClasses and pods it
// was given.
type previewReads struct {
	classes *decide.ClassSet
	pods    map[string][]string
}

func (p previewReads) readViews(_ context.Context, obs *observed, _ map[types.UID]bool) error {
	obs.Classes, obs.Pods = p.classes, p.pods
	return nil
}

// observePreview builds a preview's snapshot (observe) from what it was
// given: it reads nothing, so no context bounds it.
func observePreview(w world, views previewReads, opts Options) (*observed, error) {
	return observe(context.Background(), w, sources{pin: statusPin{}, revert: noRevert{}, views: views}, opts)
}
