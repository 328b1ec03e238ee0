package installer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/drift"
	"github.com/shimkit/shimkit/internal/installer/migrate"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// Install carries out an install plan: fetch and verify the artifact, lay
// the bundle out and switch to it, start sandboxer units, register the
// handlers and proxy plugins, restart containerd when its config changed
// and check over CRI that it came back with every handler, run the plan's
// canary pod with the new handler, then commit.
// Running it again with the same plan changes nothing and restarts nothing.
// When a step fails after the node was touched, every step is undone and
// containerd restarted again; the error then wraps ErrRolledBack, or
// ErrRollbackFailed.
func (i *Installer) Install(ctx context.Context, p *plan.NodePlan) (*Result, error) {
	res, err := i.InstallAll(ctx, []*plan.NodePlan{p})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// InstallAll carries out several install plans (of different Shims) in one
// operation, with one containerd restart: each step runs for every plan
// before the next step starts (every config edited before any bundle is
// placed), containerd restarts once when any config changed and must come
// back with every plan's handlers, then each plan's canary runs, then each
// plan commits. A failure before the commits rolls every plan back, with
// one restart; a plan that committed stays. Results are in plan order;
// with an error, only the committed plans have one (ReportAll tells the
// plan that failed from those undone with it).
func (i *Installer) InstallAll(ctx context.Context, plans []*plan.NodePlan) ([]*Result, error) {
	start := time.Now()
	names, handlers, err := runtime.CheckPlans(i.paths(), plans)
	if err != nil {
		return nil, err
	}
	label := strings.Join(names, ", ")
	rt, err := runtime.For(plans[0].Runtime, plans[0].Restart, i.runtimeOptions())
	if err != nil {
		return nil, err
	}
	hasUnits := slices.ContainsFunc(plans, func(p *plan.NodePlan) bool { return len(p.Sandboxers) > 0 })
	if err := i.paths().CheckWritable(i.paths().Targets(rt.ConfigTargets(), hasUnits)); err != nil {
		return nil, err
	}
	sess, err := i.begin(ctx, label, rt)
	if err != nil {
		return nil, err
	}
	defer sess.unlock()
	runs := make([]*run, len(plans))
	for k, p := range plans {
		runs[k] = i.newRun(p, sess, "install")
		runs[k].hs = handlers[k]
		runs[k].checkDrift()
	}
	// The configs are edited first: a config that cannot be edited safely
	// fails the install before anything on the node changed.
	// Each run gets its own steps (some keep what they did for their undo).
	before := func() []step {
		return []step{preflight{}, inUseCheck{}, verifyArtifact{}, stageBundle{}, configure{}, &placeBundle{}, &linkShims{}, &startSandboxers{}}
	}
	after := func() []step { return []step{runCanary{}, commitInstall{}} }
	steps := interleave(runs, before)
	steps = append(steps, bound{runs[0], sharedRestart(runs)})
	steps = append(steps, interleave(runs, after)...)
	err = executor{i}.executeAll(ctx, runs, steps)
	out := make([]*Result, len(runs))
	for k, r := range runs {
		if err == nil || r.committed {
			out[k] = r.result(start)
		}
	}
	if err != nil {
		return out, fmt.Errorf("install %s: %w", label, err)
	}
	return out, nil
}

// sharedRestart is the one restart of an install's runs: it must bring
// back every plan's handlers, and none of those the Shims had that no plan
// has any more.
func sharedRestart(runs []*run) *restartRuntime {
	restart := &restartRuntime{}
	for _, r := range runs {
		restart.present = append(restart.present, r.handlerNames()...)
	}
	for _, r := range runs {
		for _, h := range r.prev.handlers() {
			if !slices.Contains(restart.present, h) && !slices.Contains(restart.absent, h) {
				restart.absent = append(restart.absent, h)
			}
		}
	}
	if len(runs) > 1 {
		restart.runs = runs
	}
	return restart
}

// result is what a committed install run did.
func (r *run) result(start time.Time) *Result {
	res := &Result{Shim: r.plan.Shim.Name, Upgrade: r.had && r.prev.SpecHash != r.plan.SpecHash, Runtime: r.rt.Kind}
	res.Changed, res.Restarted, res.RestartDuration, res.CanaryDuration = r.configChanged(), r.restart.done, r.restart.dur, r.restart.canary
	res.RestartedUnit = r.restart.unit
	res.Digest, res.Files, res.VerifiedBy, res.Drift = r.rec.Digest, r.rec.Files, r.rec.VerifiedBy, r.drift.found
	res.Duration = time.Since(start)
	r.i.step("done", "shim", res.Shim, "changed", res.Changed, "restarted", res.Restarted)
	return res
}

// interleave orders the runs' steps step by step: the first step of every
// run, then the second, and so on.
func interleave(runs []*run, steps func() []step) []bound {
	per := make([][]step, len(runs))
	for k := range runs {
		per[k] = steps()
	}
	var out []bound
	for n := range per[0] {
		for k, r := range runs {
			out = append(out, bound{r, per[k][n]})
		}
	}
	return out
}

func (i *Installer) newRun(p *plan.NodePlan, sess *session, op string) *run {
	prev, had := sess.state.Shims[p.Shim.Name]
	return &run{
		i: i, plan: p, state: sess.state, rt: sess.rt, recovered: sess.recovered,
		prev: prev, had: had,
		rec: ShimState{UID: p.Shim.UID, SpecHash: p.SpecHash, Preset: sess.rt.Preset(), Runtime: sess.rt.Recorded(),
			InstalledAt: prev.InstalledAt},
		pending: &Pending{Op: op, Shim: p.Shim.Name},
	}
}

// checkDrift compares, before an install of the spec the Shim has, the
// node with the Shim's record, as Verify does. The steps repair what it
// finds: stageBundle lays a drifted bundle out again, configure puts a
// missing handler back, startSandboxers a missing unit, linkShims a
// missing link; an edited unit stays a Conflict. A check that cannot be
// made is left to the steps, which fail on it.
func (r *run) checkDrift() {
	if !r.had || r.prev.SpecHash != r.plan.SpecHash {
		return
	}
	r.bundleIntact()
	rest, err := drift.Setup(r.rt, r.i.units(), r.prev.drift())
	if err != nil {
		r.i.log().Warn("comparing the node with the record", "shim", r.plan.Shim.Name, "err", err)
	}
	r.drift.found = slices.Concat(drift.OfRecord(r.prev.drift(), r.plan), r.drift.bundle, rest)
	if len(r.drift.found) > 0 {
		r.i.log().Warn("the node drifted from the record; repairing", "shim", r.plan.Shim.Name, "drift", r.drift.found)
	}
}

func (r *run) handlerNames() []string {
	var out []string
	for _, h := range r.hs {
		out = append(out, h.Name)
	}
	return out
}

// commitInstall makes the install permanent: config backups dropped, old
// versions and units of the Shim removed, the record written.
type commitInstall struct{ noUndo }

func (commitInstall) name() string { return "committed" }

func (commitInstall) do(ctx context.Context, r *run) error {
	i := r.i
	if err := r.commitConfig(); err != nil {
		return err
	}
	if dropped, err := i.units().Commit(ctx, r.rec.Units, r.prev.Units); err != nil {
		i.log().Warn("removing units the Shim no longer has", "units", dropped, "err", err)
	}
	var keep []string
	r.rec.CurrentSince, r.rec.Retired = r.retire(ctx)
	for _, v := range r.rec.Retired {
		keep = append(keep, v.Version)
	}
	if err := bundle.Commit(i.paths(), bundleRecord(r.rec), bundleRecord(r.prev), keep); err != nil {
		i.log().Warn("removing old bundle versions", "dir", r.rec.BundleDir, "err", err)
	}
	if m := r.plan.Migrate; m != nil {
		// The node runs the Shim's handler now: what the other installer
		// left goes.
		if err := migrate.RemoveLeftovers(i.paths(), m.Handler); err != nil {
			i.log().Warn("removing what runtime-class-manager left", "handler", m.Handler, "err", err)
		}
	}
	if r.configChanged() || r.rec.InstalledAt.IsZero() || r.bundle.Version != "" {
		r.rec.InstalledAt = time.Now().UTC()
	}
	r.state.Shims[r.plan.Shim.Name] = r.rec
	r.clearPending()
	return i.store().finish(r.state)
}
