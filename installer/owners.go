package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
)

// ErrConflict: something the plan would write exists and shimkit did not
// write it for this Shim (a handler, unit, proxy plugin or PATH name of an
// admin, another tool or another Shim), or it was changed after shimkit
// wrote it. Nothing on the node was changed.
var ErrConflict = errors.New("belongs to someone else")

// ErrConcurrentEdit: undoing an operation found a file that someone else
// changed after shimkit wrote it; the file was left as it is, so that their
// edit is not lost.
var ErrConcurrentEdit = errors.New("changed by someone else after shimkit wrote it")

// containerdRuntimeTypes are the runtime types of containerd's own shims. A
// Shim may use one only to run its own OCI runtime under containerd's shim
// (options.BinaryName, as the NVIDIA and crun runtimes do); the shim binary
// itself is never shimkit's to place.
var containerdRuntimeTypes = []string{"io.containerd.runc.v1", "io.containerd.runc.v2", "io.containerd.runhcs.v1"}

// preflight checks, before anything on the node changes, that every name
// the plan asks for is free or already this Shim's: no reserved handler or
// runtime type, no handler, proxy plugin or unit of another Shim or of
// someone else, no unit changed since shimkit wrote it, and no PATH name
// that is taken where containerd needs one. It also decides which PATH
// links the install creates.
type preflight struct{}

func (preflight) name() string { return "checked" }

func (preflight) do(ctx context.Context, r *run) error {
	root, _, err := r.target.RootConfig() // nil when the node has none yet
	if err != nil {
		return err
	}
	if err := r.checkReserved(root); err != nil {
		return err
	}
	if err := errors.Join(r.checkOtherShims(), r.checkHandlersFree(root), r.checkUnitsOurs(r.unitPaths())); err != nil {
		return err
	}
	return r.planLinks(ctx)
}

func (preflight) undo(context.Context, *run) error { return nil }

// checkReserved refuses containerd's own handler and runtime types and the
// node's default runtime (default_runtime_name of root, the root config;
// runc when there is none).
func (r *run) checkReserved(root *containerdconfig.Config) error {
	def, file := "runc", r.target.Preset.Config
	if root != nil {
		def = root.DefaultRuntime
	}
	for _, h := range r.hs {
		switch {
		case h.Name == "runc":
			return fmt.Errorf("%w: handler %q of Shim %s is containerd's own runc handler", ErrReserved, h.Name, r.plan.Shim.Name)
		case h.Name == def:
			return fmt.Errorf("%w: handler %q of Shim %s is the node's default runtime (default_runtime_name in %s)", ErrReserved, h.Name, r.plan.Shim.Name, file)
		case slices.Contains(containerdRuntimeTypes, h.RuntimeType) && h.Options["BinaryName"] == nil:
			return fmt.Errorf("%w: handler %q of Shim %s: runtime type %s is containerd's own shim; a Shim may use it only with options.BinaryName (its OCI runtime under containerd's shim)",
				ErrReserved, h.Name, r.plan.Shim.Name, h.RuntimeType)
		}
	}
	return nil
}

// checkOtherShims refuses a handler, proxy plugin or unit another Shim's
// record has.
func (r *run) checkOtherShims() error {
	var errs []error
	for _, other := range slices.Sorted(maps.Keys(r.state.Shims)) {
		if other == r.plan.Shim.Name {
			continue
		}
		rec := r.state.Shims[other]
		for _, h := range r.hs {
			if slices.Contains(rec.handlers(), h.Name) {
				errs = append(errs, fmt.Errorf("%w: handler %q is Shim %s's", ErrConflict, h.Name, other))
			}
		}
		for _, sb := range r.plan.Sandboxers {
			if slices.Contains(rec.ProxyPlugins, sb.Name) {
				errs = append(errs, fmt.Errorf("%w: proxy plugin %q is Shim %s's", ErrConflict, sb.Name, other))
			}
		}
		for _, u := range r.unitPaths() {
			if slices.Contains(rec.Units, u) {
				errs = append(errs, fmt.Errorf("%w: unit %s is Shim %s's", ErrConflict, u, other))
			}
		}
	}
	return errors.Join(errs...)
}

// checkHandlersFree refuses a handler this Shim does not have yet that the
// node's config already defines (in the file shimkit edits or in the root
// config, root, when there is one), unless the plan adopts it.
func (r *run) checkHandlersFree(root *containerdconfig.Config) error {
	var errs []error
	for k, h := range r.hs {
		if slices.Contains(r.prev.handlers(), h.Name) || r.plan.Handlers[k].Adopt || r.migrates(h.Name) {
			continue
		}
		file, has, err := r.definedAnywhere(h.Name, root)
		switch {
		case err != nil:
			errs = append(errs, err)
		case has:
			errs = append(errs, fmt.Errorf("%w: handler %q is already defined in %s and shimkit did not write it; adopt it explicitly to take it over", ErrConflict, h.Name, file))
		}
	}
	return errors.Join(errs...)
}

func (r *run) definedAnywhere(handler string, root *containerdconfig.Config) (file string, has bool, err error) {
	t := r.target
	if has, err := t.HasHandler(handler); err != nil || has {
		f, _ := t.File(handler)
		return f, has, err
	}
	return t.Preset.Config, root != nil && root.HasHandler(handler), nil
}

// migrates reports whether the plan takes handler over from another
// installer (see evictions).
func (r *run) migrates(handler string) bool {
	return r.plan.Migrate != nil && r.plan.Migrate.Handler == handler
}

// unitPaths are the node paths of the plan's sandboxer units.
func (r *run) unitPaths() []string {
	var out []string
	for _, sb := range r.plan.Sandboxers {
		out = append(out, path.Join(r.i.unitDir(), sb.Unit))
	}
	return out
}

// checkUnitsOurs refuses unit files at paths that shimkit did not write for
// this Shim, or that changed since it did.
func (r *run) checkUnitsOurs(paths []string) error {
	var errs []error
	for _, p := range paths {
		cur, err := os.ReadFile(r.i.local(p))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			errs = append(errs, err)
		case !slices.Contains(r.prev.Units, p):
			errs = append(errs, fmt.Errorf("%w: unit file %s exists and shimkit did not write it", ErrConflict, p))
		case r.prev.Written[p] != "" && r.prev.Written[p] != digestOf(cur):
			errs = append(errs, fmt.Errorf("%w: unit file %s was changed after shimkit wrote it", ErrConflict, p))
		}
	}
	return errors.Join(errs...)
}

// digestOf is how the state records what shimkit wrote.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
