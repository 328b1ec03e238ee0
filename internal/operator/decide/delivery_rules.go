package decide

import (
	"time"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// DeliveryRules are what the progressive-delivery policies read beside the
// snapshot: the time, the Shim's rules (pause, windows, steps, failure
// policy), and what the status recorded of the rollout of the snapshot's
// target. Its zero value applies none of them.
type DeliveryRules struct {
	Now     time.Time
	Paused  bool
	Windows rollout.Windows
	Steps   rollout.Steps
	// Stage is the rollout's stage as the status recorded it for the
	// snapshot's target (zero: the first step, no bake yet).
	Stage rollout.Stage
	// Gate is the health gate's trip (WorkloadFailures, naming the pods
	// and nodes), nil while the updated nodes are healthy or no gate is
	// set; Halt is the halt the status recorded for the target: it stands
	// until the target changes.
	Gate, Halt *Trip
	// Unjudged: the gate could not judge the workloads now (their
	// informers are still filling): no bake ends until it can.
	Unjudged bool
	// CanRevert: onFailure is Revert and there is a previous revision to
	// go back to.
	CanRevert bool
}

// Trip is why a rollout stopped: a reason constant of package v1alpha1
// (WorkloadFailures) and a message naming the pods and nodes.
type Trip struct{ Reason, Message string }

// Hold is why the nodes left to change start none now.
type Hold string

// Holds, by precedence.
const (
	HoldNone   Hold = ""
	HoldHalted Hold = v1alpha1.ReasonHalted           // a tripped health gate, or its recorded halt
	HoldPaused Hold = v1alpha1.ReasonPaused           // spec.rolloutStrategy.paused
	HoldWindow Hold = v1alpha1.ReasonWaitingForWindow // no maintenance window is open
	HoldBaking Hold = v1alpha1.ReasonBaking           // the step's nodes bake
)

// Delivered is where a decision leaves a progressive rollout.
type Delivered struct {
	// Stage is the rollout's stage after this decision, to record.
	Stage rollout.Stage
	// Hold is why nodes left to change start none now.
	Hold Hold
	// NextWindow is when the next maintenance window opens, while nodes
	// wait for one.
	NextWindow time.Time
	// Halt is the rollout's halt: the recorded one, or the gate's trip
	// (Tripped: new with this decision).
	Halt    *Trip
	Tripped bool
	// Revert: the rollout failed (a halt, or a failed node) and goes back
	// to the previous revision.
	Revert bool
}

// waitsForWindow: the node runs workloads (no startup taint) and no admin
// forced it, so a change starts there only inside a maintenance window.
func (v *NodeView) waitsForWindow() bool { return !v.Fresh && !v.Forced }

// deliver applies the progressive-delivery rules to a decision planned
// under maxUpdate: a halt stops the rollout's installs (and, with
// Revert, turns it back), steps bound them and bake, a pause stops every
// start, a closed window every start on a node that runs workloads.
func (d *Decision) deliver(s *Snapshot, dl DeliveryRules, open bool, next time.Time) error {
	out := &d.Delivered
	out.Stage = dl.Stage
	switch {
	case dl.Halt != nil:
		out.Halt = dl.Halt
	case dl.Gate != nil:
		out.Halt, out.Tripped = dl.Gate, true
	}
	if out.Halt != nil {
		d.Rollin.Start = nil
		out.Hold = HoldHalted
	}
	out.Revert = dl.CanRevert && (out.Halt != nil || d.Rollin.Halted)
	if len(dl.Steps) > 0 && out.Halt == nil && !d.Rollin.Halted {
		total, updated := 0, 0
		for i := range s.Views {
			if v := &s.Views[i]; v.Targeted() {
				total++
				if v.Label == record.Installed && v.SpecHash == s.Hash && v.Drifted == "" {
					updated++
				}
			}
		}
		if total > 0 {
			st, err := dl.Steps.Advance(dl.Stage, rollout.Progress{Total: total, Updated: updated, InFlight: d.Rollin.InFlight}, dl.Now, dl.Gate == nil && !dl.Unjudged)
			if err != nil {
				return err
			}
			out.Stage = st.Stage
			d.Rollin.Limit(st.Allowed)
			d.Rollin.Done = d.Rollin.Done && dl.Steps.Done(st.Stage)
			if st.Baking {
				out.Hold = HoldBaking
			}
		}
	}
	if dl.Paused {
		if len(d.Rollin.Start)+len(d.Removal.Start) > 0 || out.Hold == HoldNone && !d.Done() {
			out.Hold = HoldPaused
		}
		d.Rollin.Start, d.Removal.Start = nil, nil
		return nil
	}
	if !open {
		dropped := d.keepStarting(&d.Rollin) + d.keepStarting(&d.Removal)
		if !d.Done() {
			out.NextWindow = next
		}
		if dropped > 0 && out.Hold == HoldNone {
			out.Hold = HoldWindow
		}
	}
	return nil
}

// keepStarting drops from the plan's starts the nodes that must wait for
// a window, and returns how many it dropped.
func (d *Decision) keepStarting(p *rollout.Plan) int {
	kept := p.Start[:0:0]
	for _, name := range p.Start {
		if !d.ByName[name].waitsForWindow() {
			kept = append(kept, name)
		}
	}
	dropped := len(p.Start) - len(kept)
	p.Start = kept
	return dropped
}
