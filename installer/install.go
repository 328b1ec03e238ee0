package installer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/fetch"
)

// Install fetches the shim, places its binary, registers the handler and
// restarts containerd when the config changed, then checks over CRI that
// containerd came back with the handler. Running it again with the same
// spec changes nothing and restarts nothing. When anything fails after the
// node was touched, everything is restored and containerd restarted again;
// the error then wraps ErrRolledBack, or ErrRollbackFailed.
func (i *Installer) Install(ctx context.Context, spec Spec) (*Result, error) {
	start := time.Now()
	name := spec.name()
	if err := spec.Handler.Validate(); err != nil {
		return nil, err
	}
	if spec.Fetcher == nil {
		return nil, fmt.Errorf("install %s: no fetcher", name)
	}
	sess, err := i.begin(ctx, name)
	if err != nil {
		return nil, err
	}
	defer sess.unlock()
	state, recovered, t := sess.state, sess.recovered, sess.target
	// Staging directories of a run that died; we hold the lock.
	old, _ := filepath.Glob(filepath.Join(i.local(i.binDir()), ".staging-*"))
	for _, d := range old {
		_ = os.RemoveAll(d)
	}
	binName := spec.Handler.BinaryName()
	dst := i.binaryPath(binName)
	handler := spec.Handler
	if handler.RuntimePath == "" {
		handler.RuntimePath = dst
	}
	file, err := t.File(handler.Name)
	if err != nil {
		return nil, err
	}
	prev, had := state.Shims[name]
	res := &Result{Shim: name, Upgrade: had && prev.SpecHash != spec.Hash()}
	record := ShimState{
		Handler: handler.Name, RuntimeType: handler.RuntimeType, Binaries: []string{dst},
		SpecHash: spec.Hash(), Preset: t.Preset.Name, Links: prev.Links, InstalledAt: prev.InstalledAt,
	}
	pending := &Pending{Op: "install", Shim: name, ConfigFiles: []string{file}}

	// What to undo when a later step fails.
	var backup string // local path of the previous binary
	var links []string
	placed := false
	rollback := func(change *containerdconfig.Change, restart bool, cause error) error {
		var bin string
		if placed {
			bin = dst
		}
		return i.undo(ctx, t, state, change, bin, backup, links, restart, cause)
	}

	if had && prev.SpecHash == spec.Hash() && fileExists(i.local(dst)) {
		// Same spec, binary in place: only the config may have drifted.
		record.Digest = prev.Digest
	} else {
		// Fetch into a staging directory next to the binaries (the same
		// filesystem, so placing the binary is a rename).
		if err := os.MkdirAll(i.local(i.binDir()), 0o755); err != nil {
			return nil, err
		}
		staging, err := os.MkdirTemp(i.local(i.binDir()), ".staging-"+name+"-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(staging)
		platform := i.Platform
		if platform.IsZero() {
			platform = fetch.HostPlatform()
		}
		fr, err := spec.Fetcher.Fetch(ctx, platform, staging)
		if err != nil {
			return nil, fmt.Errorf("install %s: %w", name, err)
		}
		exe, err := chooseBinary(fr.Executables, binName)
		if err != nil {
			return nil, fmt.Errorf("install %s: %w", name, err)
		}
		record.Digest = fr.Digest.String()
		i.step("fetched", "digest", record.Digest)

		// Record the intent before touching anything on the node.
		pending.Binaries = map[string]string{dst: ""}
		if fileExists(i.local(dst)) {
			pending.Binaries[dst] = dst + prevSuffix
		}
		state.Pending = pending
		if err := i.writeState(state); err != nil {
			return nil, err
		}
		if backup, err = placeBinary(filepath.Join(staging, exe), i.local(dst)); err != nil {
			return nil, rollback(nil, recovered, err)
		}
		placed = true
		i.step("placed", "binary", dst)
		if ld := i.linkDir(); ld != "" {
			link := path.Join(ld, binName)
			created, err := linkBinary(dst, i.local(link))
			if err != nil {
				return nil, rollback(nil, recovered, err)
			}
			if created {
				links = append(links, link)
				record.Links = append(slices.Clone(record.Links), link)
			}
		}
	}
	res.Digest, res.Binaries = record.Digest, record.Binaries

	state.Pending = pending
	if err := i.writeState(state); err != nil {
		return nil, rollback(nil, recovered, err)
	}
	change, err := containerdconfig.NewInstall(t, handler).Apply(ctx)
	if err != nil {
		return nil, rollback(nil, recovered, err)
	}
	res.Changed = change.Changed()
	if res.Changed {
		i.step("configured", "files", change.Files())
	}
	if (res.Changed || recovered) && i.restarts(t) {
		rs := time.Now()
		err := i.restartAndCheck(ctx, t, handler.Name, true)
		res.RestartDuration = time.Since(rs)
		if err != nil {
			return nil, rollback(change, true, err)
		}
		res.Restarted = true
	}
	if err := change.Commit(); err != nil {
		return nil, err
	}
	record.ConfigFiles = []string{file}
	if res.Changed || record.InstalledAt.IsZero() {
		record.InstalledAt = time.Now().UTC()
	}
	state.Shims[name] = record
	state.Pending = nil
	if err := i.writeState(state); err != nil {
		return nil, err
	}
	if backup != "" {
		_ = os.Remove(backup)
	}
	res.Duration = time.Since(start)
	i.step("done", "shim", name, "changed", res.Changed, "restarted", res.Restarted)
	return res, nil
}

// undo restores the node after a failed operation: the config byte for
// byte, the binary, the links; then restarts containerd again (after
// clearing a failed unit) and checks it is healthy.
func (i *Installer) undo(ctx context.Context, t containerdconfig.Target, state *State, change *containerdconfig.Change,
	dst, backup string, links []string, restart bool, cause error,
) error {
	// The caller's context may be what ran out; the rollback gets its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	var errs []error
	if change != nil {
		errs = append(errs, change.Rollback())
	}
	if dst != "" {
		errs = append(errs, restoreBinary(i.local(dst), backup))
	}
	for _, l := range links {
		errs = append(errs, unlinkOurs(i.local(l), dst))
	}
	if restart && i.restarts(t) {
		r := i.restarter(t)
		errs = append(errs, r.ResetFailed(ctx))
		if err := r.Restart(ctx); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, i.health(t).Check(ctx, "", true))
		}
	}
	if err := errors.Join(errs...); err != nil {
		i.log().Error("rollback failed", "cause", cause, "rollback", err)
		return fmt.Errorf("%w: %w; rollback: %w", ErrRollbackFailed, cause, err)
	}
	state.Pending = nil
	if err := i.writeState(state); err != nil {
		return fmt.Errorf("%w: %w; recording the rollback: %w", ErrRollbackFailed, cause, err)
	}
	i.log().Warn("rolled back", "cause", cause)
	return fmt.Errorf("%w: %w", ErrRolledBack, cause)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
