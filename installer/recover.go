package installer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
)

// recoverPending undoes what an operation that died left half done: config
// backups put back, the bundle link switched back and the version it added
// removed, units and links it wrote restored or removed. It reports whether
// anything was pending, in which case containerd must be restarted.
func (i *Installer) recoverPending(ctx context.Context, s *State) (bool, error) {
	if len(s.Pending) == 0 {
		return false, nil
	}
	var errs []error
	restored := map[string]bool{} // config files: one journal holds every change of the operation
	for k := len(s.Pending) - 1; k >= 0; k-- {
		p := s.Pending[k]
		i.log().Warn("recovering from an interrupted operation", "op", p.Op, "shim", p.Shim)
		if err := i.recoverOne(ctx, p, restored); err != nil {
			errs = append(errs, fmt.Errorf("recover interrupted %s of %s: %w", p.Op, p.Shim, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return true, err
	}
	s.Pending = nil
	return true, i.writeState(s)
}

// recoverOne undoes one Shim's part of an interrupted operation.
func (i *Installer) recoverOne(ctx context.Context, p *Pending, restored map[string]bool) error {
	var errs []error
	t := containerdconfig.Target{Root: i.root()}
	for _, f := range p.ConfigFiles {
		if restored[f] {
			continue
		}
		restored[f] = true
		_, err := containerdconfig.Restore(i.local(f))
		errs = append(errs, i.settle(t, []string{f}, err))
	}
	if p.BundleDir != "" {
		errs = append(errs, restoreBundle(i.local(p.BundleDir), p.PrevVersion, p.NewVersion))
	}
	for _, l := range slices.Sorted(maps.Keys(p.Links)) {
		errs = append(errs, unlinkOurs(i.local(l), p.Links[l]))
	}
	if len(p.Units) > 0 {
		errs = append(errs, i.restoreUnits(ctx, p.Units, p.Written))
	}
	return errors.Join(errs...)
}
