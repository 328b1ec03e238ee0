package decide

import (
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/operator/fleet"
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
	// maxUpdate, the halts and the refusal (fleet.Decide; for a deleted
	// Shim, fleet.DecideRemoval).
	Decision fleet.Decision
	// Stale are the records another Shim object of the name left
	// (StaleRecords); Relabel the labels of nodes whose image has the
	// shim (Relabel).
	Stale, Relabel []Action
	// Classes are the RuntimeClasses to take over, publish and delete
	// (Classes); a canary RuntimeClass that is someone else's starts no
	// install (Decision's starts are emptied).
	Classes ClassPlan
	// Batch is what the Shim offers the node gate (Batch).
	Batch BatchOffer
	// Taints are the startup taints the Shim's nodes lose (Taints), once
	// the Jobs started.
	Taints []Action
	// Verify are the nodes due for a verifying Job, the longest due
	// first; at most VerifySlots of them start (the budget less the
	// verifications running), each once the node gate admits it, in this
	// order. VerifyNext is when the next node is due (zero: none).
	Verify      []*fleet.NodeView
	VerifySlots int
	VerifyNext  time.Time
	// Forget are the records a deleted Shim left on nodes it never
	// installed (Forget), once its removal is done.
	Forget []Action
}

// Rules are what a plan is made under besides the snapshot: the Shim's
// rollout policy, whether installs of several Shims share a Job
// (batching), and how often an installed node is verified (negative:
// never).
type Rules struct {
	Policy       fleet.Policy
	Batching     bool
	VerifyPeriod time.Duration
}

// PlanInstall makes the plan of a Shim that is not being deleted: the
// records first, then the rollout's decision and what it implies. records
// are Records(obs), made before the reconcile knew which plan it makes.
func PlanInstall(obs *Snapshot, records []Action, r Rules) (*Plan, error) {
	d, err := fleet.Decide(obs.Fleet(), r.Policy)
	if err != nil {
		return nil, err
	}
	p := &Plan{Records: records, Stale: StaleRecords(obs)}
	p.Relabel = Relabel(obs, &d)
	p.Classes = Classes(obs, len(d.Rollin.Start) > 0)
	if p.Classes.CanaryBlocked {
		d.Rollin.Start = nil
	}
	p.Batch = Batch(obs, d.Rollin, r.Batching)
	p.Taints = Taints(obs)
	obs.Delivered = d.Delivered
	// What the status records of the rollout: on the snapshot, which the
	// status is written from.
	obs.Rollout = RecordRollout(obs, d.Delivered, FailedNodes(obs, d.Rollin, rollout.Plan{}))
	if d.Done() && obs.Refusal == nil && !p.Classes.CanaryBlocked && r.VerifyPeriod >= 0 {
		p.Verify, p.VerifySlots, p.VerifyNext = dueVerifies(obs, r.VerifyPeriod, d.Rollin.Budget)
	}
	p.Decision = d
	return p, nil
}

// PlanRemoval makes the plan of a deleted Shim: the records, then the
// removal from every node that has it, rolling (fleet.DecideRemoval).
func PlanRemoval(obs *Snapshot, records []Action, planner rollout.Planner) (*Plan, error) {
	d, err := fleet.DecideRemoval(obs.Fleet(), planner, Delivery(obs))
	if err != nil {
		return nil, err
	}
	p := &Plan{Records: records}
	p.Relabel = Relabel(obs, &d)
	if d.Removal.Done {
		p.Forget = Forget(obs)
	}
	p.Decision = d
	return p, nil
}

// dueVerifies are the nodes due for verification at the snapshot's time,
// the longest due first, how many may start (budget beside those
// running), and when the next one not yet due will be.
func dueVerifies(obs *Snapshot, period time.Duration, budget int) (due []*fleet.NodeView, slots int, next time.Time) {
	type dueNode struct {
		v  *fleet.NodeView
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
