package operator

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/classes"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/metrics"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/operator/results"
	"github.com/shimkit/shimkit/internal/operator/revision"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/operator/status"
	"github.com/shimkit/shimkit/internal/operator/watch"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Finalizer keeps a deleted Shim until its nodes are clean.
const Finalizer = shimspec.Finalizer

// Reconciler reconciles Shims: it observes, decides and acts (Reconcile),
// with one role per concern (roles.go).
type Reconciler struct {
	*deps
	resolve   *pin.Pinner
	reads     *results.Reader
	classes   *classes.Classes
	revisions *revision.Store
	batch     *batcher
	starter   *jobStarter
	gateCheck *gateCheck
	report    *status.Reporter
	exec      *executor
	gate      *nodegate.Gate
	retries   retries
	released  released
	// nodes and jobs are the cache's own objects (SetupWithManager; nil:
	// read through client).
	nodes *watch.Store[*corev1.Node]
	jobs  *watch.Store[*batchv1.Job]
}

// New returns a Reconciler. recorder may be nil (no events).
func New(c client.Client, recorder events.EventRecorder, opts Options) (*Reconciler, error) {
	if opts.InstallerImage == "" || opts.Namespace == "" {
		return nil, errors.New("operator: Options.InstallerImage and Options.Namespace are required")
	}
	switch opts.ConfigMode {
	case "", "auto", "file", "drop-in":
	default:
		return nil, fmt.Errorf("operator: Options.ConfigMode %q: want auto, file or drop-in", opts.ConfigMode)
	}
	if b := opts.BundleRoot; b != "" && (!path.IsAbs(b) || path.Clean(b) == "/") {
		return nil, fmt.Errorf("operator: Options.BundleRoot %q: want an absolute node directory other than /", b)
	}
	if l := opts.LinkDir; l != "" && l != "-" && !path.IsAbs(l) {
		return nil, fmt.Errorf(`operator: Options.LinkDir %q: want an absolute node directory, or "-" for none`, l)
	}
	d := &deps{client: c, reader: c, recorder: phase.NewRecorder(recorder, opts.PhaseReport), opts: opts.withDefaults(), metrics: metrics.New()}
	if report := d.opts.PhaseReport; report != nil && c != nil {
		d.client = phase.Checked(c, report)
		d.reader = d.client
	}
	r := &Reconciler{}
	newRoles(r, d, nodegate.New(d.opts.MaxRestartingNodes, d.opts.BatchWindow))
	return r, nil
}

// observed is the reconcile's snapshot (package decide).
type observed = decide.Snapshot

// Reconcile drives one Shim towards its spec (or, when deleted, towards no
// node having it).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	ctx = phase.Start(ctx)
	shim := &v1alpha1.Shim{}
	if err := r.client.Get(ctx, req.NamespacedName, shim); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.Forget(req.Name)
			r.reads.Keep(req.Name, nil)
			r.resolve.Forget(req.Name)
			r.retries.forget(req.Name)
			r.report.Forget(req.Name)
			r.released.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if r.released.has(shim) {
		return ctrl.Result{}, nil // gone, the cache behind
	}
	obs, err := r.observe(ctx, shim)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.planAndAct(ctx, obs)
}

// planAndAct makes the reconcile's plan on its snapshot and carries it
// out; obs is read, never written.
func (r *Reconciler) planAndAct(ctx context.Context, obs *observed) (res ctrl.Result, err error) {
	shim := obs.Shim
	run := newActing(obs)
	// What finished and what a retry asks, decided on the snapshot and
	// written with the rest of the decision; w is the snapshot as they
	// leave it (obs is not changed).
	w, acts, err := decide.Records(obs)
	defer func() {
		// The reconcile is past its decision (or failed): the Events
		// gathered go out as the plan said (all of them when it failed, or
		// made none); held back, the plan's requeue brings the Shim back
		// for them (decide.Plan.Requeue).
		phase.Decided(ctx)
		r.notify(ctx, run)
		ev := run.eventPlan
		r.report.Flush(ctx, shim, &run.events, ev == nil || ev.Emit || err != nil, time.Now())
	}()
	if err != nil {
		return ctrl.Result{}, err
	}
	if !shim.DeletionTimestamp.IsZero() {
		return r.uninstallAll(ctx, run, w, acts)
	}
	return r.install(ctx, run, w, acts)
}

// observe reads the Shim's world from the cache and the operator's
// memory, and builds its snapshot (observe).
func (r *Reconciler) observe(ctx context.Context, shim *v1alpha1.Shim) (*observed, error) {
	// The cache's own objects, not copies (at 5,000 nodes a copy of every
	// node and Job per reconcile was most of the operator's garbage): a
	// reconcile never changes them; it patches by name, and copies what it
	// changes (a node's taints).
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := r.listJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("shim %s: %w", shim.Name, err)
	}
	now := time.Now()
	r.gate.Sync(jobs, now)
	// Read, never changed: the cache's own objects (no copy per reconcile).
	var shims v1alpha1.ShimList
	if err := r.client.List(ctx, &shims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Shims: %w", err)
	}
	w := world{Shim: shim, Nodes: nodes, Jobs: jobs, Shims: shims.Items, Now: now, RolloutNow: r.opts.Clock.Now(),
		Gate: r.gate.Read(jobview.LabelValue(shim.Name), now), Held: r.gate.InFlight(jobview.LabelValue(shim.Name)), Deleted: r.retries.deleted,
		StatusWritten: r.report.LastWritten(shim.Name), EventsEmitted: r.report.LastEmitted(shim.Name), EventsHeld: r.report.Held(shim.Name),
		Result: func(j *jobview.View) (*plan.NodeResult, bool) { return r.reads.Get(shim.Name, j.Object.UID) }}
	// The status's retry (NewSnapshot), or the one this operator acted on
	// since, which the cached status may not show yet.
	w.Retried, w.RetriedHash = r.retries.latest(shim)
	views := viewReads{resolve: r.resolve, reads: r.reads, revisions: r.revisions, classes: r.classes, check: r.gateCheck}
	return observe(ctx, w, sources{pin: reconcilePin{r.resolve}, revert: r.revisions, views: views}, r.opts)
}

// reconcilePin is a reconcile's pinning: the artifact resolved and pinned
// for the spec (pin.Pinner), the status's pin for a refused spec or a
// deleted Shim, none for a preinstalled shim (the nodes' image has it).
type reconcilePin struct{ *pin.Pinner }

func (p reconcilePin) pinFor(ctx context.Context, obs *observed) pin.Pinned {
	switch {
	case obs.Shim.Spec.FetchStrategy.Type == v1alpha1.FetchPreinstalled:
		return pin.Pinned{Show: obs.Shown}
	case obs.Refusal == nil && obs.Shim.DeletionTimestamp.IsZero():
		return p.Pin(ctx, obs.Shim, obs.SpecHash)
	}
	return statusPin{}.pinFor(ctx, obs)
}

// viewReads is a reconcile's viewReading: the roles that read what its
// views call for.
type viewReads struct {
	resolve   *pin.Pinner
	reads     *results.Reader
	revisions *revision.Store
	classes   *classes.Classes
	check     *gateCheck
}

// readViews reads what a reconcile's views call for: the results of the
// Jobs that finished, the pulls of those running, the revisions a new
// one drops, the RuntimeClasses (and a predecessor's), the pods a
// removal waits for and the health gate's failures; and when the
// artifact is resolved again.
func (r viewReads) readViews(ctx context.Context, obs *observed, attached map[types.UID]bool) (err error) {
	obs.ResolveAt = r.resolve.NextAt(obs.Shim, obs.Art)
	r.reads.Keep(obs.Shim.Name, attached)
	if err := r.reads.ReadFinished(ctx, obs); err != nil {
		return err
	}
	if err := r.reads.ReadPulls(ctx, obs); err != nil {
		return err
	}
	if err := r.revisions.ReadDroppable(ctx, obs); err != nil {
		return err
	}
	if obs.Classes, err = r.classes.Read(ctx, obs.Shim); err != nil {
		return err
	}
	if obs.RCMUID, err = r.classes.ReadPredecessor(ctx, obs); err != nil {
		return err
	}
	if err := r.check.readPods(ctx, obs); err != nil {
		return err
	}
	return r.check.readGate(ctx, obs)
}

// group runs a reconcile's independent API calls (one per node) a few at
// a time, as a wave of 100 nodes would otherwise wait on 100 round trips.
func (r *deps) group(ctx context.Context) *errgroup.Group {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(64)
	return g
}

// install rolls the current spec out to the targeted nodes (matching and
// eligible) and removes it from nodes that stopped being targeted. A
// refused spec starts no install; removals go on. It reads the snapshot
// (obs), decides (decide.Decide), then carries the decision out, each
// write a step.
func (r *Reconciler) install(ctx context.Context, run *acting, obs *observed, records []decide.Action) (ctrl.Result, error) {
	p, err := decide.PlanInstall(obs, records, decide.Rules{
		Policy:   decide.Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), Shared: sharedNodes(obs, r.opts.BatchWindow >= 0), PlanFor: obs.PlanFor(r.opts.settings()), Delivery: decide.Delivery(obs)},
		Batching: r.opts.BatchWindow >= 0, VerifyPeriod: r.opts.VerifyPeriod, Settings: r.opts.settings(), ServerVersion: r.opts.ServerVersion,
		Resync: r.opts.ResyncPeriod, GatePeriod: r.opts.GatePeriod,
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	phase.Decided(ctx)
	return r.carryOut(ctx, run, p)
}

// carryOut carries out a Shim's install plan, in its order: the records,
// the finalizer, what the views already assume, the plan's Events, the
// relabels, the RuntimeClasses, the batch offer, the Jobs whose
// reservations the node gate commits, the taints, the status, the
// verifications. A write that does not find what the snapshot read (a
// RuntimeClass changed meanwhile, a node another Shim's installer took)
// is not forced: the plan's status, which assumed it, is not written, and
// the Shim comes back after p.RequeueRefused to plan again.
func (r *Reconciler) carryOut(ctx context.Context, run *acting, p *decide.Plan) (ctrl.Result, error) {
	obs := run.obs
	run.eventPlan = &p.Events // read as the reconcile ends
	r.notify(ctx, run)
	if err := r.exec.act(ctx, run, p.Records); err != nil {
		return ctrl.Result{}, err
	}
	// The finalizer first, before anything is on a node: a deleted Shim
	// waits for its nodes to be clean.
	if err := r.exec.act(ctx, run, p.Finalize); err != nil {
		return ctrl.Result{}, err
	}
	// What the decision does not depend on, written once it is made: the
	// views already read stale records, a reimaged node's label and the
	// predecessor's RuntimeClasses as they will be.
	conflict, err := r.prepareNodes(ctx, run, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.notify(ctx, run, p.Notices...)
	r.report.Progress(obs.Shim.Name, p.Progress)
	if err := r.exec.act(ctx, run, p.Relabel); err != nil {
		return ctrl.Result{}, err
	}
	refused, err := r.startAll(ctx, run, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if refused = refused || conflict; !refused {
		if err := r.report.Update(ctx, obs, p.Status); err != nil {
			return ctrl.Result{}, err
		}
	}
	refusedVerify, err := r.starter.startNodes(ctx, run, p.Verify)
	if err != nil {
		return ctrl.Result{}, err
	}
	if refused || refusedVerify {
		return ctrl.Result{RequeueAfter: p.RequeueRefused}, nil
	}
	return ctrl.Result{RequeueAfter: p.Requeue}, nil
}

// startAll publishes the RuntimeClasses, the canary's among them, before
// an installer needs one; offers the Shim's installs to the other Shims
// (which may wait a moment for it: decide.Plan.BatchWait), so that one
// Job per node carries them all; cordons, drains and releases nodes as
// the disruption policy planned; starts the Jobs; and removes the
// startup taints. refused: a RuntimeClass changed since the snapshot, or
// the node gate refused a reservation.
func (r *Reconciler) startAll(ctx context.Context, run *acting, p *decide.Plan) (refused bool, _ error) {
	conflict, err := r.classes.Publish(ctx, run.obs.Shim, run.classes, p.Classes)
	if err != nil {
		return false, err
	}
	r.batch.offer(run.obs, p.Batch)
	if err := r.exec.act(ctx, run, p.Disrupt); err != nil {
		return false, err
	}
	refused, err = r.starter.startNodes(ctx, run, p.Starts)
	if err != nil {
		return false, err
	}
	return refused || conflict, r.exec.act(ctx, run, p.Taints)
}

// sharedNodes are the nodes that other Shims would install now (nil
// without batching), as the snapshot's gate view has them: the planner
// prefers them, so that their installs share one Job.
func sharedNodes(obs *observed, batching bool) map[string]bool {
	if !batching {
		return nil
	}
	return obs.Gate.Wanted()
}

// prepareNodes carries out what the views already assume, before any
// RuntimeClass, label or Job of the decision: a migration takes the
// predecessor's RuntimeClasses over first, so that deleting it can no
// longer delete them, and releases the nodes already installed; records
// another Shim object of the name left on nodes, and a reimaged node's
// label, are dropped.
func (r *Reconciler) prepareNodes(ctx context.Context, run *acting, p *decide.Plan) (conflict bool, _ error) {
	conflict, err := r.classes.TakeOver(ctx, run.obs.Shim, run.classes, p.Classes)
	if err != nil {
		return false, err
	}
	if err := r.classes.ReleaseRCMLabels(ctx, run.obs, p.RCMReleases); err != nil {
		return false, err
	}
	return conflict, r.exec.act(ctx, run, p.Stale)
}

// notify emits the Events reading the snapshot found (decide.Notice), once
// the decision is complete, and only once (a reconcile that ends before
// its decision, an error, emits them on its way out), then those of more
// (the plan's), each related to its node (or to the Shim alone).
func (r *deps) notify(ctx context.Context, run *acting, more ...decide.Notice) {
	notices := more
	if !run.notified {
		notices = append(slices.Clone(run.obs.Notices), more...)
		run.notified = true
	}
	for _, n := range notices {
		r.recorder.Say(ctx, run.obs.Shim, n)
	}
}
