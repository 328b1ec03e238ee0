package installer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/ownership"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// Uninstall removes a Shim: first its handlers and proxy plugins from the
// config, then a restart and a check that containerd is healthy without
// them, and only then its units, links and bundle, never the other way
// round. A Shim that is not installed is a no-op. On failure the config is
// restored and containerd restarted again (ErrRolledBack); the files stay.
func (i *Installer) Uninstall(ctx context.Context, p *plan.NodePlan) (*Result, error) {
	start := time.Now()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	name := p.Shim.Name
	rt, err := runtime.For(i.store().runtimeOf(p), p.Restart, i.runtimeOptions())
	if err != nil {
		return nil, err
	}
	sess, err := i.begin(ctx, name, rt)
	if err != nil {
		return nil, err
	}
	defer sess.unlock()
	r := i.newRun(p, sess, "uninstall")
	res := &Result{Shim: name, Files: r.prev.Files, Digest: r.prev.Digest}
	if !r.had && !sess.recovered {
		res.Duration = time.Since(start)
		i.step("done", "shim", name, "changed", false)
		return res, nil
	}
	steps := interleave([]*run{r}, func() []step {
		return []step{uninstallCheck{}, inUseCheck{}, unconfigure{}, &unlinkDetected{}, &restartRuntime{absent: r.prev.handlers()}, removeFiles{}}
	})
	if err := (executor{i}).executeAll(ctx, []*run{r}, steps); err != nil {
		return nil, fmt.Errorf("uninstall %s: %w", name, err)
	}
	res.Changed, res.Restarted, res.RestartDuration = r.configChanged(), r.restart.done, r.restart.dur
	res.Runtime, res.RestartedUnit = r.rt.Kind, r.restart.unit
	res.Duration = time.Since(start)
	i.step("done", "shim", name, "changed", res.Changed, "restarted", res.Restarted)
	return res, nil
}

// runtimeOf is the runtime a plan names, else the one the Shim's record
// names (read before the lock: the state file is only ever replaced
// whole), else "" (detected).
func (st stateStore) runtimeOf(p *plan.NodePlan) string {
	if p.Runtime != "" {
		return p.Runtime
	}
	s, err := st.read()
	if err != nil {
		return ""
	}
	rec, had := s.Shims[p.Shim.Name]
	if !had {
		return ""
	}
	return cmp.Or(rec.Runtime, plan.RuntimeContainerd) // records before CRI-O are containerd's
}

// uninstallCheck refuses, before anything changes, to remove a unit file
// someone changed after shimkit wrote it.
type uninstallCheck struct{ noUndo }

func (uninstallCheck) name() string { return "checked" }
func (uninstallCheck) do(_ context.Context, r *run) error {
	return ownership.CheckUnitsOurs(r.i.paths(), r.prev.Units, r.prev.Units, r.prev.Written)
}

// unlinkDetected removes, before the restart, the Shim's PATH links that
// the distribution (k3s, RKE2) finds and renders a runtime table of its own
// for (an older shimkit made them): with the link there, the restarted
// agent would render the handler again. The undo puts them back.
type unlinkDetected struct{ removed map[string]string }

func (*unlinkDetected) name() string { return "unlinked" }

func (s *unlinkDetected) do(_ context.Context, r *run) error {
	pf, ok := r.rt.PathFinder()
	if !ok {
		return nil
	}
	var err error
	s.removed, err = bundle.UnlinkDetected(r.i.paths(), r.prev.Links, r.prev.BundleDir, pf.GeneratesRuntimeFor)
	return err
}

func (s *unlinkDetected) undo(_ context.Context, r *run) error {
	return bundle.Relink(r.i.paths(), s.removed)
}

// removeFiles commits the config and removes what containerd no longer
// uses: units, links, the bundle, and the record.
type removeFiles struct{ noUndo }

func (removeFiles) name() string { return "removed" }

func (removeFiles) do(ctx context.Context, r *run) error {
	i, rec := r.i, r.prev
	if err := r.commitConfig(); err != nil {
		return err
	}
	errs := []error{i.units().Remove(ctx, rec.Units), bundle.RemoveAll(i.paths(), bundleRecord(rec), rec.Binaries)}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("handlers removed, but cleaning up the Shim's files: %w", err)
	}
	delete(r.state.Shims, r.plan.Shim.Name)
	r.clearPending()
	return i.store().finish(r.state)
}

// ShimStatus is what Status finds for one Shim.
type ShimStatus struct {
	Name  string
	State ShimState
	// Problems lists what is not as recorded (a missing or changed file,
	// a handler no longer in the config), as Verify's drift does; empty
	// when the Shim is intact.
	Problems []string
}

// Status reports the Shims installed on the node and whether each is
// intact. It changes nothing and takes no lock.
func (i *Installer) Status(ctx context.Context) ([]ShimStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	state, err := i.store().read()
	if err != nil {
		return nil, err
	}
	var out []ShimStatus
	for _, name := range slices.Sorted(maps.Keys(state.Shims)) {
		rec := state.Shims[name]
		st := ShimStatus{Name: name, State: rec}
		found, err := i.drift(rec, "", plan.Restart{}, nil)
		st.Problems = found
		if err != nil {
			st.Problems = append(st.Problems, err.Error())
		}
		out = append(out, st)
	}
	for _, p := range state.Pending {
		out = append(out, ShimStatus{Name: p.Shim, Problems: []string{"an interrupted " + p.Op + " is pending; the next run recovers it"}})
	}
	return out, nil
}
