package installer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/drift"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// Verify compares the node with what the last install of the plan's Shim
// recorded, and that record with the plan (operation verify: the install
// plan of the Shim's current spec). The Result's Drift lists every
// mismatch, one entry each; empty, the node has exactly what the record
// says:
//
//   - "not installed": the node has no record of the Shim;
//   - the record's spec hash, pinned digest or Shim UID is not the plan's;
//   - a bundle file is missing, no longer a regular file, or holds other
//     bytes than the install placed (records of installers before file
//     digests: only missing), or has another mode than the plan's;
//   - the bundle's "current" link or a PATH link does not point where the
//     install pointed it;
//   - a handler of the record is not in containerd's config (the file the
//     installer edits for it);
//   - a unit file is missing or was changed after shimkit wrote it;
//   - an interrupted operation on the Shim is pending.
//
// Verify is strictly read-only: it takes the node lock shared (so that it
// never sees an operation half-way), recovers nothing, writes nothing,
// restarts nothing and never fetches the artifact. Installing the same
// plan repairs what it reports, but for a unit someone else changed
// (ErrConflict). An error (the state or containerd's config cannot be
// read) means the node could not be compared; Report classifies it.
func (i *Installer) Verify(ctx context.Context, p *plan.NodePlan) (*Result, error) {
	start := time.Now()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	name := p.Shim.Name
	if p.Operation != plan.OpVerify {
		return nil, fmt.Errorf("%w: operation %q of Shim %s given to Verify", plan.ErrInvalid, p.Operation, name)
	}
	unlock, err := i.store().lockShared(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", name, err)
	}
	defer unlock()
	res, err := i.compare(p)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", name, err)
	}
	res.Duration = time.Since(start)
	i.step("compared", "shim", name, "drift", len(res.Drift))
	return res, nil
}

// compare compares the node with the record of the plan's Shim and the
// record with the plan, holding the lock.
func (i *Installer) compare(p *plan.NodePlan) (*Result, error) {
	name := p.Shim.Name
	state, err := i.store().read()
	if err != nil {
		return nil, err
	}
	res := &Result{Shim: name}
	if rec, had := state.Shims[name]; !had {
		res.Drift = []string{"not installed"}
	} else {
		node, err := i.drift(rec, p.Runtime, p.Restart, drift.Files(rec.drift(), p))
		if err != nil {
			return nil, err
		}
		res.Digest, res.Files, res.VerifiedBy = rec.Digest, rec.Files, rec.VerifiedBy
		res.Drift = slices.Concat(drift.OfRecord(rec.drift(), p), node)
	}
	for _, pd := range state.Pending {
		if pd.Shim == name {
			res.Drift = append(res.Drift, "an interrupted "+pd.Op+" is pending; the next install or uninstall recovers it")
		}
	}
	return res, nil
}

// drift compares the node with a Shim's record on the runtime the record
// names, or kind when given (a plan's, with its restart settings r): its
// bundle (files of the plan's layout, or nil), handlers and units. Each
// comparison only reads the node.
func (i *Installer) drift(rec ShimState, kind string, r plan.Restart, files []plan.File) ([]string, error) {
	rt, err := runtime.For(cmp.Or(kind, rec.Runtime, plan.RuntimeContainerd), r, i.runtimeOptions())
	if err != nil {
		return nil, err
	}
	return drift.Node(i.paths(), rt, i.units(), rec.drift(), files)
}

// drift is what the record says, as far as drift goes.
func (s ShimState) drift() drift.Record {
	return drift.Record{SpecHash: s.SpecHash, Digest: s.Digest, UID: s.UID, Bundle: bundleRecord(s),
		Handlers: s.handlers(), Units: s.Units, Written: s.Written}
}

// bundleRecord is what a Shim's record says of its bundle (the binaries of
// records before bundles among its files).
func bundleRecord(rec ShimState) bundle.Record {
	return bundle.Record{Dir: rec.BundleDir, Version: rec.Version, Files: slices.Concat(rec.Files, rec.Binaries),
		Digests: rec.FileDigests, Links: rec.Links}
}
