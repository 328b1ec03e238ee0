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
	o := ownership{r}
	var free error
	if c, ok := unwrap(r.rt).(handlerChecker); ok {
		e := r.configEdit()
		e.Handlers, e.Sandboxers, e.Migrate = r.handlers(), r.plan.Sandboxers, r.plan.Migrate
		for _, h := range r.plan.Handlers {
			e.Adopt = append(e.Adopt, h.Adopt)
		}
		free = c.checkHandlers(e, r.prev.handlers())
		if errors.Is(free, ErrReserved) || errors.Is(free, ErrRuntimeUnsupported) {
			return free
		}
	}
	if err := errors.Join(o.checkOtherShims(), free, o.checkUnitsOurs(o.unitPaths())); err != nil {
		return err
	}
	return linkPlan{r}.plan(ctx)
}

// ownership is the ownership role of an operation: what another Shim or
// someone else has, checked before anything changes.
type ownership struct{ r *run }

func (preflight) undo(context.Context, *run) error { return nil }

// checkOtherShims refuses a handler, proxy plugin or unit another Shim's
// record has.
func (o ownership) checkOtherShims() error {
	r := o.r
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
		for _, u := range o.unitPaths() {
			if slices.Contains(rec.Units, u) {
				errs = append(errs, fmt.Errorf("%w: unit %s is Shim %s's", ErrConflict, u, other))
			}
		}
	}
	return errors.Join(errs...)
}

// unitPaths are the node paths of the plan's sandboxer units.
func (o ownership) unitPaths() []string {
	r := o.r
	var out []string
	for _, sb := range r.plan.Sandboxers {
		out = append(out, path.Join(r.i.paths().unitDir(), sb.Unit))
	}
	return out
}

// checkUnitsOurs refuses unit files at paths that shimkit did not write for
// this Shim, or that changed since it did.
func (o ownership) checkUnitsOurs(paths []string) error {
	r := o.r
	var errs []error
	for _, p := range paths {
		cur, err := os.ReadFile(r.i.paths().local(p))
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
