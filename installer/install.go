package installer

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
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
	names, handlers, err := checkPlans(i.paths(), plans)
	if err != nil {
		return nil, err
	}
	label := strings.Join(names, ", ")
	rt, err := i.runtimeFor(plans[0].Runtime, plans[0].Restart)
	if err != nil {
		return nil, err
	}
	if err := (hostCheck{i}).checkWritable(hostCheck{i}.writeTargets(rt, plans)); err != nil {
		return nil, err
	}
	sess, err := i.begin(ctx, label, rt)
	if err != nil {
		return nil, err
	}
	defer sess.unlock()
	runs := make([]*run, len(plans))
	restart := &restartRuntime{}
	for k, p := range plans {
		runs[k] = i.newRun(p, sess, "install")
		runs[k].hs = handlers[k]
		runs[k].checkDrift()
		restart.present = append(restart.present, runs[k].handlerNames()...)
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
	// The configs are edited first: a config that cannot be edited safely
	// fails the install before anything on the node changed.
	// Each run gets its own steps (some keep what they did for their undo).
	before := func() []step {
		return []step{preflight{}, verifyArtifact{}, stageBundle{}, configure{}, &placeBundle{}, &linkShims{}, &startSandboxers{}}
	}
	after := func() []step { return []step{runCanary{}, commitInstall{}} }
	steps := interleave(runs, before)
	steps = append(steps, bound{runs[0], restart})
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

// result is what a committed install run did.
func (r *run) result(start time.Time) *Result {
	res := &Result{Shim: r.plan.Shim.Name, Upgrade: r.had && r.prev.SpecHash != r.plan.SpecHash}
	res.Changed, res.Restarted, res.RestartDuration, res.CanaryDuration = r.configChanged(), r.restarted, r.restartDur, r.canaryDur
	res.Digest, res.Files, res.VerifiedBy, res.Drift = r.rec.Digest, r.rec.Files, r.rec.VerifiedBy, r.found
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

// checkPlans validates the plans of one operation: install plans of
// different Shims, with different handlers, for the same runtime. It
// returns the Shims' names and their resolved handlers.
func checkPlans(l layout, plans []*plan.NodePlan) ([]string, [][]containerdconfig.RuntimeHandler, error) {
	if len(plans) == 0 {
		return nil, nil, fmt.Errorf("%w: no plan", plan.ErrInvalid)
	}
	var names []string
	var handlers [][]containerdconfig.RuntimeHandler
	owner := map[string]string{} // handler → Shim
	for _, p := range plans {
		if err := p.Validate(); err != nil {
			return nil, nil, err
		}
		name := p.Shim.Name
		if p.Operation != plan.OpInstall {
			return nil, nil, fmt.Errorf("%w: operation %q of Shim %s given to Install", plan.ErrInvalid, p.Operation, name)
		}
		if slices.Contains(names, name) {
			return nil, nil, fmt.Errorf("%w: Shim %s has two plans in one operation", plan.ErrInvalid, name)
		}
		if !reflect.DeepEqual(p.Restart, plans[0].Restart) {
			return nil, nil, fmt.Errorf("%w: Shim %s: restart settings differ from Shim %s's in one operation", plan.ErrInvalid, name, names[0])
		}
		if p.Runtime != plans[0].Runtime {
			return nil, nil, fmt.Errorf("%w: Shim %s: runtime %q differs from Shim %s's %q in one operation", plan.ErrInvalid, name, p.Runtime, names[0], plans[0].Runtime)
		}
		hs, err := resolveHandlers(l, p)
		if err != nil {
			return nil, nil, err
		}
		for _, h := range hs {
			if other, ok := owner[h.Name]; ok {
				return nil, nil, fmt.Errorf("%w: handler %s is in the plans of Shims %s and %s", plan.ErrInvalid, h.Name, other, name)
			}
			owner[h.Name] = name
		}
		names = append(names, name)
		handlers = append(handlers, hs)
	}
	return names, handlers, nil
}

// resolveHandlers converts the plan's handlers, with the bundle
// placeholder resolved.
func resolveHandlers(l layout, p *plan.NodePlan) ([]containerdconfig.RuntimeHandler, error) {
	var out []containerdconfig.RuntimeHandler
	for _, h := range p.Handlers {
		rh, err := runtimeHandler(h, l.currentDir(p.Shim.Name))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", plan.ErrInvalid, err)
		}
		out = append(out, rh)
	}
	return out, nil
}

func (i *Installer) newRun(p *plan.NodePlan, sess *session, op string) *run {
	prev, had := sess.state.Shims[p.Shim.Name]
	return &run{
		i: i, plan: p, state: sess.state, rt: sess.rt, recovered: sess.recovered,
		prev: prev, had: had,
		rec: ShimState{UID: p.Shim.UID, SpecHash: p.SpecHash, Preset: sess.rt.preset(), Runtime: sess.rt.recorded(),
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
	rest, err := driftCheck{r.i}.setup(r.rt, r.prev)
	if err != nil {
		r.i.log().Warn("comparing the node with the record", "shim", r.plan.Shim.Name, "err", err)
	}
	r.found = slices.Concat(recordDrift(r.prev, r.plan), r.bundleDrift, rest)
	if len(r.found) > 0 {
		r.i.log().Warn("the node drifted from the record; repairing", "shim", r.plan.Shim.Name, "drift", r.found)
	}
}

func (r *run) handlers() []containerdconfig.RuntimeHandler { return r.hs }

func (r *run) handlerNames() []string {
	var out []string
	for _, h := range r.hs {
		out = append(out, h.Name)
	}
	return out
}

// commitInstall makes the install permanent: config backups dropped, old
// versions and units of the Shim removed, the record written.
type commitInstall struct{}

func (commitInstall) name() string { return "committed" }

func (commitInstall) do(ctx context.Context, r *run) error {
	i := r.i
	if err := r.commitConfig(); err != nil {
		return err
	}
	units := sandboxUnits{i}
	units.dropBackups(r.rec.Units)
	var dropped []string
	for _, u := range r.prev.Units {
		if !slices.Contains(r.rec.Units, u) {
			dropped = append(dropped, u)
		}
	}
	if err := units.remove(ctx, dropped); err != nil {
		i.log().Warn("removing units the Shim no longer has", "units", dropped, "err", err)
	}
	for _, l := range r.prev.Links {
		if !slices.Contains(r.rec.Links, l) {
			_ = unlinkUnder(i.paths().local(l), r.prev.BundleDir)
		}
	}
	if err := pruneVersions(i.paths().local(r.rec.BundleDir), r.rec.Version); err != nil {
		i.log().Warn("removing old bundle versions", "dir", r.rec.BundleDir, "err", err)
	}
	if m := r.plan.Migrate; m != nil {
		// The node runs the Shim's handler now: what the other installer
		// left goes.
		if err := (rcmCleanup{i}).removeLeftovers(m.Handler); err != nil {
			i.log().Warn("removing what runtime-class-manager left", "handler", m.Handler, "err", err)
		}
	}
	if r.configChanged() || r.rec.InstalledAt.IsZero() || r.stagedVer != "" {
		r.rec.InstalledAt = time.Now().UTC()
	}
	r.state.Shims[r.plan.Shim.Name] = r.rec
	r.clearPending()
	return i.store().write(r.state)
}

func (commitInstall) undo(context.Context, *run) error { return nil }
