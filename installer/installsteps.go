package installer

import (
	"context"
	"errors"
	"path"
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/drift"
	"github.com/shimkit/shimkit/internal/installer/ownership"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/source"
)

// The steps of an install, in order. Each does its part through the
// internal package of its concern and keeps what its undo needs.

// preflight checks, before anything on the node changes, that every name
// the plan asks for is free or already this Shim's: no reserved handler or
// runtime type, no handler, proxy plugin or unit of another Shim or of
// someone else, no unit changed since shimkit wrote it, and no PATH name
// that is taken where containerd needs one. It also decides which PATH
// links the install creates.
type preflight struct{ noUndo }

func (preflight) name() string { return "checked" }

func (preflight) do(ctx context.Context, r *run) error {
	free := r.rt.CheckHandlers(runtime.PlanEdit(r.configEdit(), r.plan, r.hs, nil, nil), r.prev.handlers())
	if errors.Is(free, ErrReserved) || errors.Is(free, ErrRuntimeUnsupported) {
		return free
	}
	want := ownership.Claims{Handlers: r.handlerNames(), Units: r.unitPaths()}
	for _, sb := range r.plan.Sandboxers {
		want.ProxyPlugins = append(want.ProxyPlugins, sb.Name)
	}
	others := map[string]ownership.Claims{}
	for name, rec := range r.state.Shims {
		if name != r.plan.Shim.Name {
			others[name] = ownership.Claims{Handlers: rec.handlers(), ProxyPlugins: rec.ProxyPlugins, Units: rec.Units}
		}
	}
	ours := ownership.CheckUnitsOurs(r.i.paths(), want.Units, r.prev.Units, r.prev.Written)
	if err := errors.Join(ownership.CheckOthers(others, want), free, ours); err != nil {
		return err
	}
	lk := bundle.Linker{Layout: r.i.paths(), Offline: r.i.Offline, Log: r.i.log(), Preset: r.rt.Preset()}
	if pf, ok := r.rt.PathFinder(); ok {
		lk.Finder = pf
	}
	var err error
	r.links, err = lk.Plan(ctx, r.hs)
	return err
}

// unitPaths are the node paths of the plan's sandboxer units.
func (r *run) unitPaths() []string {
	var out []string
	for _, sb := range r.plan.Sandboxers {
		out = append(out, path.Join(r.i.paths().UnitDir(), sb.Unit))
	}
	return out
}

// verifyArtifact checks the artifact's signature before anything is
// downloaded or written, when the plan asks for it. A bundle already in
// place for the same spec was verified when it was installed.
type verifyArtifact struct{ noUndo }

func (verifyArtifact) name() string { return "verified" }

func (verifyArtifact) do(ctx context.Context, r *run) error {
	a := r.plan.Artifact
	switch {
	case a.Verification == nil:
		return nil
	case r.sameBundle():
		r.rec.VerifiedBy = r.prev.VerifiedBy
		return nil
	}
	v := r.i.Verifier
	if v == nil {
		v = SignatureVerifier{}
	}
	by, err := v.VerifyArtifact(ctx, a)
	if err != nil {
		return err
	}
	r.rec.VerifiedBy = by
	r.i.step("verified", "digest", a.Digest, "signer", by)
	return nil
}

// stageBundle fetches and verifies the artifact into a staging directory
// inside the Shim's bundle directory (the same filesystem, so placing it is
// a rename) and lays the bundle out there: the plan's files, with their
// modes, placeholders substituted. Nothing the node uses changes.
type stageBundle struct{}

func (stageBundle) name() string { return "fetched" }

func (stageBundle) do(ctx context.Context, r *run) error {
	r.rec.BundleDir = r.i.paths().BundleDir(r.plan.Shim.Name)
	if r.sameBundle() {
		// Same spec and artifact, bundle in place as installed: only the
		// config may have drifted.
		r.rec.Version, r.rec.Files, r.rec.Digest, r.rec.FileDigests = r.prev.Version, r.prev.Files, r.prev.Digest, r.prev.FileDigests
		return nil
	}
	get := source.Into(r.i.paths(), r.plan.Artifact, r.i.Fetcher, r.i.Platform)
	laid, err := r.bundle.Stage(ctx, r.i.paths(), r.plan.Shim.Name, r.plan.Files, get, r.prev.Version, r.bundleIntact)
	if err != nil {
		return err
	}
	r.rec.Digest, r.rec.Version, r.rec.Files, r.rec.FileDigests = laid.Digest, laid.Version, laid.Files, laid.FileDigests
	return nil
}

func (stageBundle) undo(_ context.Context, r *run) error {
	return r.bundle.Unstage(r.i.paths(), r.rec.BundleDir)
}

// sameBundle reports whether the Shim's bundle stays as it is: installed
// from the same spec and the artifact the plan pins, and as installed.
func (r *run) sameBundle() bool {
	pinned := r.plan.Artifact.Digest
	return r.had && r.prev.SpecHash == r.plan.SpecHash && r.prev.Version != "" &&
		(pinned == "" || pinned == r.prev.Digest) && r.bundleIntact()
}

// bundleIntact reports whether the Shim's bundle is as its record says
// (its drift is empty), comparing once per run.
func (r *run) bundleIntact() bool {
	if !r.drift.checked {
		d, err := bundle.Drift(r.i.paths(), bundleRecord(r.prev), drift.Files(r.prev.drift(), r.plan))
		if err != nil {
			d = append(d, err.Error()) // what cannot be read is laid out again
		}
		r.drift.bundle, r.drift.checked = d, true
	}
	return len(r.drift.bundle) == 0
}

// configure registers the plan's handlers (and, on containerd, sandboxer
// proxy plugins) in the runtime's config, and removes those an earlier
// version of the Shim registered and this one no longer has, through the
// node's Runtime. Every edit keeps a backup (or journal) until commit.
type configure struct{}

func (configure) name() string { return "configured" }

func (configure) do(ctx context.Context, r *run) error {
	e := runtime.PlanEdit(r.configEdit(), r.plan, r.hs, r.prev.handlers(), r.prev.ProxyPlugins)
	for _, sb := range r.plan.Sandboxers {
		r.rec.ProxyPlugins = append(r.rec.ProxyPlugins, sb.Name)
	}
	if err := r.applyConfig(ctx, e); err != nil {
		return err
	}
	r.rec.Handlers = r.handlerNames()
	r.rec.ConfigFiles = r.pending.ConfigFiles
	return nil
}

func (configure) undo(_ context.Context, r *run) error { return r.rollbackConfig() }

// placeBundle moves the staged version into the Shim's bundle directory and
// switches "current" to it with one rename: containerd and new pods see
// either the old bundle or the new one, never a mix. The old version stays
// until commit; pods running on it keep running.
type placeBundle struct{ switched bool }

func (*placeBundle) name() string { return "placed" }

func (s *placeBundle) do(_ context.Context, r *run) error {
	var err error
	s.switched, err = r.bundle.Place(r.i.paths().Local(r.rec.BundleDir), r.rec.Version, func(prev string) error {
		r.pending.BundleDir, r.pending.PrevVersion, r.pending.NewVersion = r.rec.BundleDir, prev, r.rec.Version
		return r.savePending()
	})
	r.changed = r.changed || s.switched
	if s.switched {
		r.bundle.SwitchedAt = time.Now().UTC() // a sandbox created since runs the new version
	}
	return err
}

func (s *placeBundle) undo(_ context.Context, r *run) error {
	if !s.switched {
		return nil
	}
	return bundle.Restore(r.i.paths().Local(r.pending.BundleDir), r.pending.PrevVersion, r.pending.NewVersion)
}

// linkShims puts a symlink to each handler's shim binary in LinkDir, so that
// containerd 1.6 (which ignores runtime_path for pod sandboxes) finds it on
// its PATH. The links point at the bundle's "current" directory, so they
// survive upgrades. Which links it creates was decided by preflight: only
// names that no file on containerd's PATH has.
type linkShims struct{ created []string }

func (*linkShims) name() string { return "linked" }

func (s *linkShims) do(_ context.Context, r *run) error {
	r.rec.Links = slices.Clone(r.links.Own)
	if len(r.links.New) == 0 {
		return nil
	}
	r.pending.Links = r.links.New
	if err := r.savePending(); err != nil {
		return err
	}
	created, err := r.links.Make(r.i.paths())
	s.created, r.changed = created, r.changed || len(created) > 0
	r.rec.Links = append(r.rec.Links, created...)
	slices.Sort(r.rec.Links)
	return err
}

func (s *linkShims) undo(_ context.Context, r *run) error {
	var errs []error
	for _, l := range s.created {
		errs = append(errs, bundle.UnlinkOurs(r.i.paths().Local(l), r.pending.Links[l]))
	}
	return errors.Join(errs...)
}
