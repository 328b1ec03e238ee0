package decide

import (
	"slices"
	"time"

	nodev1 "k8s.io/api/node/v1"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// Plan is a reconcile's decision on its snapshot, made whole before the
// first write: the operator's executor carries it out in the order of its
// fields and decides nothing of its own. What it cannot know beforehand
// it is told by the cluster as it acts: whether the node gate admits a
// node another Shim's installer may hold (Decision's starts and Verify are
// asked of the gate, in this order), and whether a write still finds what
// was read (a RuntimeClass changed meanwhile is published by the next
// reconcile).
type Plan struct {
	// Records are what the finished and stuck Jobs and a new retry
	// request change (Records), first.
	Records []Action
	// Decision is each node's state and the Jobs to start under
	// maxUpdate, the halts and the refusal (Decide; for a deleted
	// Shim, DecideRemoval).
	Decision Decision
	// Stale are the records another Shim object of the name left
	// (StaleRecords); Relabel the labels of nodes whose image has the
	// shim (Relabel).
	Stale, Relabel []Action
	// Classes are the RuntimeClasses to take over, publish and delete
	// (Classes); a canary RuntimeClass that is someone else's starts no
	// install (Decision's starts are emptied). A deleted Shim's are the
	// fences of its classes while its removal is not done (ClassFences).
	Classes ClassPlan
	// Batch is what the Shim offers the node gate (Batch), recorded
	// before any Job starts; BatchWait how long it waits for the others'
	// offers before it starts any install (the gate view's answer).
	Batch     BatchOffer
	BatchWait time.Duration
	// Starts are the installer Jobs to start, installs then uninstalls,
	// each with the node gate's reservation it needs (admitted by the
	// snapshot's gate view; one the gate refuses when committed is not
	// started, and the Shim comes back after RequeueRefused).
	Starts []Start
	// Disrupt are what the Shim's disruption policy does before Starts
	// (disruptStarts): the nodes cordoned, the pods evicted, the drains
	// failed at their timeout, the nodes released.
	Disrupt []Action
	// Taints are the startup taints the Shim's nodes lose (Taints), once
	// the Jobs started.
	Taints []Action
	// Verify are the verifying Jobs to start: the nodes due, the longest
	// due first, at most the budget less the verifications running, each
	// admitted by the gate view. VerifyNext is when the next node is due,
	// or a node the gate refused is tried again (zero: none).
	Verify     []Start
	VerifyNext time.Time
	// Notices are the Events the decision makes (decisionNotices), and
	// Progress what the metrics show of the rollout.
	Notices  []Notice
	Progress Progress
	// Rollout is what the status records of the rollout
	// (RecordRollout; nil: as it was).
	Rollout *v1alpha1.RolloutStatus
	// Status is the Shim's status as the plan leaves it (written last,
	// after the Jobs started).
	Status StatusPlan
	// Requeue is when the Shim is looked at again (0: not by time): the
	// rollout's next event, a status held back, a pull to check;
	// RequeueRefused when a reservation of Starts or Verify was refused.
	Requeue, RequeueRefused time.Duration
	// Events is what becomes of the per-node Events gathered (EventsAt):
	// emitted now, or held back until Events.Due, when the Shim comes
	// back if any are.
	Events EventPlan
	// RCMReleases are the nodes whose runtime-class-manager label goes
	// (RCMReleases), with the takeovers.
	RCMReleases []RCMRelease
	// Evict are the pods a deleted Shim evicts (spec.deletePolicy Evict:
	// Evictions), together, after its uninstall Jobs started.
	Evict []Action
	// Forget are the records a deleted Shim left on nodes it never
	// installed (Forget), and Delete the RuntimeClasses it owns, once its
	// removal is done.
	Forget []Action
	Delete []*nodev1.RuntimeClass
	// Finalize puts the operator's finalizer on a Shim that lacks it,
	// after the records and before anything else, or takes it off a
	// deleted Shim last, once its removal is done.
	Finalize []Action
}

// Rules are what a plan is made under besides the snapshot: the Shim's
// rollout policy, whether installs of several Shims share a Job
// (batching), how often an installed node is verified (negative: never),
// and the operator's settings and periods.
type Rules struct {
	Policy       Policy
	Batching     bool
	VerifyPeriod time.Duration
	// Settings are the operator's node plan settings; ServerVersion the
	// API server's (how an image reaches an installer); Resync how often
	// a Shim is looked at without a change, GatePeriod how often the
	// health gate looks at the workloads.
	Settings           shimspec.Settings
	ServerVersion      string
	Resync, GatePeriod time.Duration
}

// PlanInstall makes the plan of a Shim that is not being deleted: the
// records first, then the rollout's decision and what it implies. records
// are Records(obs), made before the reconcile knew which plan it makes.
func PlanInstall(read *Snapshot, records []Action, r Rules) (*Plan, error) {
	obs := read.Copy()
	d, err := Decide(obs, r.Policy)
	if err != nil {
		return nil, err
	}
	p := &Plan{Records: records, Stale: StaleRecords(obs), RCMReleases: RCMReleases(obs)}
	if !slices.Contains(obs.Shim.Finalizers, shimspec.Finalizer) {
		p.Finalize = []Action{AddFinalizer{Shim: obs.Shim}}
	}
	p.Relabel = append(Relabel(obs, &d), Fences(obs, &d, true)...)
	p.Classes = Classes(obs, len(d.Rollin.Start) > 0)
	if p.Classes.CanaryBlocked {
		d.Rollin.Start = nil
	}
	gate := obs.Gate.Copy()
	p.Batch = Batch(obs, d.Rollin, r.Batching)
	if p.BatchWait = gate.Wait(p.Batch.Offer, p.Batch.Unsettled); p.BatchWait > 0 {
		d.Rollin.Start = nil
	}
	var waiting, removing bool
	p.Starts, waiting = planInstalls(obs, &d, &gate, r)
	removals, removing, err := planRemovals(obs, &d, &gate, r)
	if err != nil {
		return nil, err
	}
	p.Starts = append(p.Starts, removals...)
	var disrupting bool
	p.Starts, p.Disrupt, disrupting = disruptStarts(obs, &d, p.Starts)
	waiting = waiting || disrupting
	p.Taints = Taints(obs)
	p.Rollout = RecordRollout(obs, d.Delivered, FailedNodes(obs, d.Rollin, rollout.Plan{}))
	if d.Done() && obs.Refusal == nil && !p.Classes.CanaryBlocked && r.VerifyPeriod >= 0 {
		due, slots, next := dueVerifies(obs, r.VerifyPeriod, d.Rollin.Budget)
		if p.Verify, p.VerifyNext, err = planVerifies(obs, due, slots, next, &gate, r); err != nil {
			return nil, err
		}
	}
	replacing(obs, p.Starts, p.Verify)
	telling(obs, p.Starts, p.Verify)
	p.Decision = d
	p.Notices, p.Progress = decisionNotices(obs, d, p.Rollout), progressOf(obs, d)
	settled := d.Done() || d.Rollin.Halted || d.Delivered.Hold != HoldNone
	p.Status = statusOf(obs, statusIn{install: d.Rollin, removal: d.Removal, classes: p.Classes, starts: p.Starts,
		delivered: d.Delivered, rollout: p.Rollout, settled: settled})
	p.Requeue, p.RequeueRefused = requeue(obs, p, r, waiting || removing)
	p.Events = EventsAt(obs.EventsEmitted, obs.Now, p.Status.Settled)
	p.Requeue, p.RequeueRefused = eventsBack(obs, p, p.Requeue), eventsBack(obs, p, p.RequeueRefused)
	return p, nil
}

// PlanRemoval makes the plan of a deleted Shim: the records, then the
// removal from every node that has it, rolling (DecideRemoval).
func PlanRemoval(read *Snapshot, records []Action, planner rollout.Planner, r Rules) (*Plan, error) {
	obs := read.Copy()
	d, err := DecideRemoval(obs, planner, Delivery(obs))
	if err != nil {
		return nil, err
	}
	p := &Plan{Records: records}
	p.Relabel = append(Relabel(obs, &d), Fences(obs, &d, false)...)
	if !d.Removal.Done {
		var warn []Action
		p.Classes, warn = ClassFences(obs, &d)
		p.Relabel = append(p.Relabel, warn...)
	}
	gate := obs.Gate.Copy()
	if p.Starts, _, err = planRemovals(obs, &d, &gate, r); err != nil {
		return nil, err
	}
	var disrupting bool
	p.Starts, p.Disrupt, disrupting = disruptStarts(obs, &d, p.Starts)
	replacing(obs, p.Starts)
	telling(obs, p.Starts)
	var evicts Together
	for _, e := range Evictions(obs, &d, len(p.Starts)) {
		evicts = append(evicts, evictPod(obs.Shim, e, nil)) // the pods' own grace periods
	}
	p.Evict = []Action{evicts}
	p.Decision = d
	p.Status.Settled = d.Removal.Done || d.Removal.Halted
	if d.Removal.Done {
		p.Forget, p.Delete = Forget(obs), obs.Classes.Owned(obs.Shim)
		p.Finalize = []Action{RemoveFinalizer{Shim: obs.Shim}}
	} else {
		p.Status = statusOf(obs, statusIn{removal: d.Removal, starts: p.Starts, settled: d.Removal.Halted})
		p.Requeue, p.RequeueRefused = r.Resync, min(r.Resync, nodegate.Retry)
		if disrupting {
			p.Requeue = min(r.Resync, nodegate.Retry)
		}
		if len(d.Removal.Held) > 0 && (p.Requeue == 0 || p.Requeue > InUseRecheck) {
			p.Requeue = InUseRecheck // pods may go any time: no watch tells
		}
		p.Requeue, p.RequeueRefused = soonest(obs, p.Requeue, time.Millisecond, p.Status.Due, obs.Due), soonest(obs, p.RequeueRefused, time.Millisecond, obs.Due)
	}
	p.Events = EventsAt(obs.EventsEmitted, obs.Now, p.Status.Settled)
	p.Requeue, p.RequeueRefused = eventsBack(obs, p, p.Requeue), eventsBack(obs, p, p.RequeueRefused)
	return p, nil
}

// eventsBack is after (a requeue; 0: none), or sooner when per-node
// notes are held back (the earlier reconciles', or this plan's: its
// notes and the Jobs it starts): then the Shim comes back when they are
// due (EventPlan.Due).
func eventsBack(obs *Snapshot, p *Plan, after time.Duration) time.Duration {
	if p.Events.Emit || !obs.EventsHeld && !p.notes() {
		return after
	}
	return soonest(obs, after, time.Millisecond, p.Events.Due)
}

// notes: carrying the plan out may gather per-node notes (Note; a Job
// started).
func (p *Plan) notes() bool {
	if len(p.Starts)+len(p.Verify) > 0 {
		return true
	}
	for _, acts := range [][]Action{p.Records, p.Stale, p.Relabel, p.Disrupt, p.Taints, p.Evict, p.Forget} {
		if hasNote(acts) {
			return true
		}
	}
	return false
}

func hasNote(acts []Action) bool {
	for _, a := range acts {
		switch a := a.(type) {
		case Note:
			return true
		case Together:
			if hasNote(a) {
				return true
			}
		case InOrder:
			if hasNote(a) {
				return true
			}
		}
	}
	return false
}

// soonest is after (0: none), or the time from the snapshot's until the
// soonest of at when that comes first (zero times are none; at least
// least).
func soonest(obs *Snapshot, after, least time.Duration, at ...time.Time) time.Duration {
	for _, t := range at {
		if w := max(t.Sub(obs.Now), least); !t.IsZero() && (after == 0 || w < after) {
			after = w
		}
	}
	return after
}

// planVerifies are the verifying Jobs of the nodes due, at most slots,
// each admitted by the gate view; a node it refuses is tried again after
// nodegate.Retry (next).
func planVerifies(obs *Snapshot, due []*NodeView, slots int, next time.Time, gate *nodegate.View, r Rules) ([]Start, time.Time, error) {
	var out []Start
	for _, v := range due {
		if len(out) >= slots {
			break // the next ones when these finish (their Jobs' events)
		}
		st, ok, err := planJob(obs, v, jobview.OpVerify, "Verifying", gate, r)
		if err != nil {
			return nil, next, err
		}
		if !ok {
			// Another Shim's installer runs there: looked at again soon.
			if retry := obs.Now.Add(nodegate.Retry); next.IsZero() || retry.Before(next) {
				next = retry
			}
			continue
		}
		out = append(out, st)
	}
	return out, next, nil
}

// requeue is when the Shim is looked at again, and when instead should
// the gate refuse a reservation. A rollout that is done comes back when
// the artifact is resolved again, the next verification is due, or a
// node just installed is checked for drift (a foreign RuntimeClass's
// change requeues through the watch); one waiting for other Shims'
// offers, after the batch window; one waiting for a node another Shim's
// installer holds, within nodegate.Retry; else the resync period. A
// rollout's bake, window, revert or health gate may bring it sooner
// (DeliveryRequeue).
func requeue(obs *Snapshot, p *Plan, r Rules, waiting bool) (after, refused time.Duration) {
	d := p.Decision
	sooner := func(at time.Time, least time.Duration) { after = soonest(obs, after, least, at) }
	switch {
	case d.Done():
		sooner(obs.ResolveAt, time.Second)
		sooner(p.VerifyNext, time.Second)
		if !obs.DriftCheck.IsZero() {
			sooner(obs.DriftCheck.Add(time.Second), 0)
		}
	case p.BatchWait > 0:
		after = p.BatchWait
	case waiting:
		after = min(r.Resync, nodegate.Retry)
	default:
		after = r.Resync
	}
	if len(d.Rollin.Held)+len(d.Removal.Held) > 0 && (after == 0 || after > InUseRecheck) {
		after = InUseRecheck // pods may go any time: no watch tells
	}
	after = DeliveryRequeue(obs, d, after, r.GatePeriod)
	// A status held back, a pull to check: back by then at the latest.
	after = soonest(obs, after, time.Millisecond, p.Status.Due, obs.Due)
	refused = nodegate.Retry
	if after > 0 {
		refused = min(after, nodegate.Retry)
	}
	return after, refused
}

// dueVerifies are the nodes due for verification at the snapshot's time,
// the longest due first, how many may start (budget beside those
// running), and when the next one not yet due will be.
func dueVerifies(obs *Snapshot, period time.Duration, budget int) (due []*NodeView, slots int, next time.Time) {
	type dueNode struct {
		v  *NodeView
		at time.Time
	}
	var all []dueNode
	running := 0
	for i := range obs.Views {
		v := &obs.Views[i]
		if v.Verify != nil && v.Verify.Running() {
			running++
		}
		at, ok := v.VerifyDue(obs.Hash, period)
		switch {
		case !ok:
		case at.After(obs.Now):
			if next.IsZero() || at.Before(next) {
				next = at
			}
		default:
			all = append(all, dueNode{v, at})
		}
	}
	slices.SortStableFunc(all, func(a, b dueNode) int { return a.at.Compare(b.at) })
	for _, d := range all {
		due = append(due, d.v)
	}
	return due, max(0, budget-running), next
}
