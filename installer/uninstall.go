package installer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
)

// Uninstall removes a shim: first the handler from the config, then a
// restart and a check that containerd is healthy without the handler, and
// only then the binary, never the other way round. A shim that is not
// installed is a no-op. On failure the config is restored and containerd
// restarted again (ErrRolledBack), and the binary stays.
func (i *Installer) Uninstall(ctx context.Context, name string) (*Result, error) {
	start := time.Now()
	sess, err := i.begin(ctx, name)
	if err != nil {
		return nil, err
	}
	defer sess.unlock()
	state, recovered, t := sess.state, sess.recovered, sess.target
	rec, had := state.Shims[name]
	handler := name
	if had {
		handler = rec.Handler
	}
	res := &Result{Shim: name, Binaries: rec.Binaries, Digest: rec.Digest}

	file, err := t.File(handler)
	if err != nil {
		return nil, err
	}
	state.Pending = &Pending{Op: "uninstall", Shim: name, ConfigFiles: []string{file}}
	if err := i.writeState(state); err != nil {
		return nil, err
	}
	change, err := containerdconfig.NewUninstall(t, handler).Apply(ctx)
	if err != nil {
		return nil, i.undo(ctx, t, state, nil, "", "", nil, recovered, err)
	}
	res.Changed = change.Changed()
	if res.Changed {
		i.step("configured", "files", change.Files())
	}
	if (res.Changed || recovered) && i.restarts(t) {
		rs := time.Now()
		err := i.restartAndCheck(ctx, t, handler, false)
		res.RestartDuration = time.Since(rs)
		if err != nil {
			return nil, i.undo(ctx, t, state, change, "", "", nil, true, err)
		}
		res.Restarted = true
	}
	if err := change.Commit(); err != nil {
		return nil, err
	}
	// containerd no longer knows the handler: the binary can go.
	var errs []error
	for _, l := range rec.Links {
		for _, b := range rec.Binaries {
			errs = append(errs, unlinkOurs(i.local(l), b))
		}
	}
	for _, b := range rec.Binaries {
		if err := os.Remove(i.local(b)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("uninstall %s: handler removed, but cleaning up its files: %w", name, err)
	}
	i.step("removed", "binaries", rec.Binaries)
	delete(state.Shims, name)
	state.Pending = nil
	if err := i.writeState(state); err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	i.step("done", "shim", name, "changed", res.Changed, "restarted", res.Restarted)
	return res, nil
}

// ShimStatus is what Status finds for one shim.
type ShimStatus struct {
	Name  string
	State ShimState
	// Problems lists what is not as recorded (a missing binary, a handler
	// no longer in the config); empty when the shim is intact.
	Problems []string
}

// Status reports the shims installed on the node and whether each is
// intact. It changes nothing and takes no lock.
func (i *Installer) Status(ctx context.Context) ([]ShimStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	state, err := i.readState()
	if err != nil {
		return nil, err
	}
	t, err := i.target()
	if err != nil {
		return nil, err
	}
	var out []ShimStatus
	for _, name := range slices.Sorted(maps.Keys(state.Shims)) {
		rec := state.Shims[name]
		st := ShimStatus{Name: name, State: rec}
		for _, b := range rec.Binaries {
			if !fileExists(i.local(b)) {
				st.Problems = append(st.Problems, "binary "+b+" is missing")
			}
		}
		switch has, err := t.HasHandler(rec.Handler); {
		case err != nil:
			st.Problems = append(st.Problems, err.Error())
		case !has:
			st.Problems = append(st.Problems, "handler "+rec.Handler+" is not in containerd's config")
		}
		out = append(out, st)
	}
	if state.Pending != nil {
		out = append(out, ShimStatus{Name: state.Pending.Shim, Problems: []string{"an interrupted " + state.Pending.Op + " is pending; the next run recovers it"}})
	}
	return out, nil
}
