package installer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// recovery is the recovery role: what an operation that died left half
// done is undone by the next one, before anything else.
type recovery struct{ i *Installer }

// recoverPending undoes what an operation that died left half done: config
// backups put back, the bundle link switched back and the version it added
// removed, units and links it wrote restored or removed. It reports whether
// anything was pending, in which case the runtime must be restarted.
func (rc recovery) recoverPending(ctx context.Context, s *State) (bool, error) {
	i := rc.i
	if len(s.Pending) == 0 {
		return false, nil
	}
	var errs []error
	restored := map[string]bool{} // config files: one journal holds every change of the operation
	for k := len(s.Pending) - 1; k >= 0; k-- {
		p := s.Pending[k]
		i.log().Warn("recovering from an interrupted operation", "op", p.Op, "shim", p.Shim)
		if err := rc.recoverOne(ctx, p, restored); err != nil {
			errs = append(errs, fmt.Errorf("recover interrupted %s of %s: %w", p.Op, p.Shim, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return true, err
	}
	s.Pending = nil
	return true, i.store().write(s)
}

// recoverOne undoes one Shim's part of an interrupted operation.
func (rc recovery) recoverOne(ctx context.Context, p *Pending, restored map[string]bool) error {
	i := rc.i
	errs := []error{rc.recoverConfig(p, restored)}
	if p.BundleDir != "" {
		errs = append(errs, restoreBundle(i.paths().local(p.BundleDir), p.PrevVersion, p.NewVersion))
	}
	for _, l := range slices.Sorted(maps.Keys(p.Links)) {
		errs = append(errs, unlinkOurs(i.paths().local(l), p.Links[l]))
	}
	if len(p.Units) > 0 {
		errs = append(errs, sandboxUnits{i}.restore(ctx, p.Units, p.Written))
	}
	return errors.Join(errs...)
}

// recoverConfig puts back the runtime's config files of a pending record:
// containerd's from their journals next to them (one journal holds every
// change of the operation, so each file once), CRI-O's from the handlers'
// journals in its state directory.
func (rc recovery) recoverConfig(p *Pending, restored map[string]bool) error {
	i := rc.i
	var errs []error
	if p.Runtime == plan.RuntimeCRIO {
		t := crioTarget(i)
		for _, h := range p.Handlers {
			_, err := crioconfig.Restore(t, h)
			errs = append(errs, settleCRIO(t, i.log(), h, err))
		}
		return errors.Join(errs...)
	}
	t := containerdconfig.Target{Root: i.paths().root()}
	for _, f := range p.ConfigFiles {
		if restored[f] {
			continue
		}
		restored[f] = true
		_, err := containerdconfig.Restore(i.paths().local(f))
		errs = append(errs, settleConcurrent(t, i.log(), []string{f}, err))
	}
	return errors.Join(errs...)
}
