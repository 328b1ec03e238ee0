package installer

import (
	"context"
	"fmt"
	"slices"
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
	start := time.Now()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Operation != plan.OpInstall {
		return nil, fmt.Errorf("%w: operation %q given to Install", plan.ErrInvalid, p.Operation)
	}
	name := p.Shim.Name
	handlers, err := i.resolveHandlers(p)
	if err != nil {
		return nil, err
	}
	sess, err := i.begin(ctx, name, p.Restart)
	if err != nil {
		return nil, err
	}
	defer sess.unlock()
	r := i.newRun(p, sess, "install")
	r.hs = handlers
	res := &Result{Shim: name, Upgrade: r.had && r.prev.SpecHash != p.SpecHash}

	restart := &restartContainerd{present: r.handlerNames()}
	for _, h := range r.prev.handlers() {
		if !slices.Contains(restart.present, h) {
			restart.absent = append(restart.absent, h)
		}
	}
	// The config is edited first: a config that cannot be edited safely
	// fails the install before anything on the node changed.
	steps := []step{preflight{}, verifyArtifact{}, stageBundle{}, configure{}, &placeBundle{}, &linkShims{}, &startSandboxers{}, restart, runCanary{}, commitInstall{}}
	if err := i.execute(ctx, r, steps); err != nil {
		return nil, fmt.Errorf("install %s: %w", name, err)
	}
	res.Changed, res.Restarted, res.RestartDuration, res.CanaryDuration = r.configChanged(), r.restarted, r.restartDur, r.canaryDur
	res.Digest, res.Files, res.VerifiedBy = r.rec.Digest, r.rec.Files, r.rec.VerifiedBy
	res.Duration = time.Since(start)
	i.step("done", "shim", name, "changed", res.Changed, "restarted", res.Restarted)
	return res, nil
}

// resolveHandlers converts the plan's handlers, with the bundle
// placeholder resolved.
func (i *Installer) resolveHandlers(p *plan.NodePlan) ([]containerdconfig.RuntimeHandler, error) {
	var out []containerdconfig.RuntimeHandler
	for _, h := range p.Handlers {
		rh, err := runtimeHandler(h, i.currentDir(p.Shim.Name))
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
		i: i, plan: p, state: sess.state, target: sess.target, recovered: sess.recovered,
		prev: prev, had: had,
		rec:     ShimState{UID: p.Shim.UID, SpecHash: p.SpecHash, Preset: sess.target.Preset.Name, InstalledAt: prev.InstalledAt},
		pending: &Pending{Op: op, Shim: p.Shim.Name},
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
	i.dropUnitBackups(r.rec.Units)
	var dropped []string
	for _, u := range r.prev.Units {
		if !slices.Contains(r.rec.Units, u) {
			dropped = append(dropped, u)
		}
	}
	if err := i.removeUnits(ctx, dropped); err != nil {
		i.log().Warn("removing units the Shim no longer has", "units", dropped, "err", err)
	}
	for _, l := range r.prev.Links {
		if !slices.Contains(r.rec.Links, l) {
			_ = unlinkUnder(i.local(l), r.prev.BundleDir)
		}
	}
	if err := pruneVersions(i.local(r.rec.BundleDir), r.rec.Version); err != nil {
		i.log().Warn("removing old bundle versions", "dir", r.rec.BundleDir, "err", err)
	}
	if m := r.plan.Migrate; m != nil {
		// The node runs the Shim's handler now: what the other installer
		// left goes.
		if err := i.removeRCMLeftovers(m.Handler); err != nil {
			i.log().Warn("removing what runtime-class-manager left", "handler", m.Handler, "err", err)
		}
	}
	if r.configChanged() || r.rec.InstalledAt.IsZero() || r.stagedVer != "" {
		r.rec.InstalledAt = time.Now().UTC()
	}
	r.state.Shims[r.plan.Shim.Name] = r.rec
	r.state.Pending = nil
	return i.writeState(r.state)
}

func (commitInstall) undo(context.Context, *run) error { return nil }
