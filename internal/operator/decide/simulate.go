package decide

import (
	"time"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
)

// Wave is one round of a simulated rollout: the nodes that start
// installing (Install) or uninstalling (Remove) together, when, and what
// holds the next round back (a bake, a window, a pause, a halt).
type Wave struct {
	// At is when the wave starts: now, the end of the previous step's
	// bake, or when a maintenance window opens.
	At              time.Time
	Install, Remove []string
	// Step is the rollout step (spec.rolloutStrategy.steps, 0-based) the
	// wave belongs to (-1: no steps).
	Step int
	// AfterRunning: the wave waits for the Jobs running before it (an
	// earlier rollout's, or a wave's the simulation took as done) to end.
	AfterRunning bool
}

// Simulation is the course a rollout takes from the snapshot when every
// node it starts succeeds: what Decide decides now (the first wave), then
// again with those nodes done, wave after wave, through bakes and
// windows.
type Simulation struct {
	// First is the decision of now, as the operator's reconcile would
	// make it.
	First Decision
	Waves []Wave
	// Stopped says why the simulation ended before every node was done
	// (HoldPaused, HoldHalted; HoldNone: it ran to the end, or MaxWaves).
	Stopped Hold
	// Halt is the halt that stops the rollout, when Stopped is HoldHalted.
	Halt *Trip
	// End are the nodes as the course leaves them (the snapshot's views
	// are not changed).
	End []NodeView
}

// MaxWaves bounds a simulation (a rollout of 1,000 nodes one at a time
// has 1,000 waves).
const MaxWaves = 10000

// Simulate decides as Decide does, wave after wave, each started node
// taken as done at once (installed at the target, or clean; a
// preinstalled node labelled or unlabelled), the clock moved to the end of
// a bake or the opening of a window when one holds the next wave. Installs
// take no time in it: every wave that a window admits starts when it
// opens. It changes nothing it is given: it decides on a Copy.
func Simulate(read *Snapshot, p Policy) (Simulation, error) {
	s := read.Copy()
	sim := Simulation{End: s.Views}
	after := false
	for i := 0; i < MaxWaves; i++ {
		d, err := Decide(s, p)
		if err != nil {
			return sim, err
		}
		if i == 0 {
			sim.First = d
		}
		p.Delivery.Stage = d.Delivered.Stage
		w := Wave{At: p.Delivery.Now, Install: concat(d.Rollin.Start, d.Label), Remove: concat(d.Removal.Start, d.Unlabel), Step: -1, AfterRunning: after}
		if len(w.Install)+len(w.Remove) > 0 {
			after = false
			if len(p.Delivery.Steps) > 0 {
				w.Step = d.Delivered.Stage.Step
			}
			sim.Waves = append(sim.Waves, w)
			settle(d, s.Hash)
			continue
		}
		if d.Done() {
			return sim, nil
		}
		next, stop := advance(d, p.Delivery.Now)
		if stop == HoldNone && !next.After(p.Delivery.Now) {
			if finish(s.Views) {
				after = true // the Jobs running end; then the rollout goes on
				continue
			}
			stop = HoldHalted // nothing starts and nothing will: a failed node halts it
		}
		if stop != HoldNone {
			sim.Stopped, sim.Halt = stop, d.Delivered.Halt
			return sim, nil
		}
		p.Delivery.Now = next
	}
	return sim, nil
}

func concat(a, b []string) []string { return append(append([]string(nil), a...), b...) }

// settle takes the decision's starts as done.
func settle(d Decision, hash string) {
	for _, name := range concat(d.Rollin.Start, d.Label) {
		v := d.ByName[name]
		v.Label, v.SpecHash, v.Job, v.Held, v.Failure, v.Drifted = record.Installed, hash, nil, false, nil, ""
	}
	for _, name := range concat(d.Removal.Start, d.Unlabel) {
		v := d.ByName[name]
		v.Label, v.SpecHash, v.Job, v.Held, v.Failure = "", "", nil, false, nil
	}
}

// finish takes the Jobs running (or held) as succeeded: the node has
// what its install installs, or nothing after an uninstall. False: none
// runs.
func finish(nodes []NodeView) bool {
	any := false
	for i := range nodes {
		v := &nodes[i]
		switch {
		case v.Job != nil && v.Job.Running() && v.Job.Op == jobview.OpUninstall:
			v.Label, v.SpecHash = "", ""
		case v.Job != nil && v.Job.Running():
			v.Label, v.SpecHash, v.Failure = record.Installed, v.Job.SpecHash, nil
		case v.Held:
		default:
			continue
		}
		v.Job, v.Held, any = nil, false, true
	}
	return any
}

// advance is when the next decision is made: when a bake ends, or when a
// window opens; or why none is (a pause, a halt, no window).
func advance(d Decision, now time.Time) (time.Time, Hold) {
	dl := d.Delivered
	switch dl.Hold {
	case HoldBaking:
		return dl.Stage.BakeUntil, HoldNone
	case HoldWindow:
		if dl.NextWindow.IsZero() {
			return now, HoldWindow
		}
		return dl.NextWindow, HoldNone
	case HoldNone:
		return now, HoldNone
	}
	return now, dl.Hold
}
