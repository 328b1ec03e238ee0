package installer

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// SandboxLister lists the pod sandboxes the node's runtime has, ready or
// stopped and not yet removed, each with its handler. CRISandboxes is the
// real one; installertest.Sandboxes the in-memory one of tests.
type SandboxLister interface {
	Sandboxes(ctx context.Context) ([]plan.Sandbox, error)
}

// CRISandboxes asks the runtime over CRI (ListPodSandbox) on its socket.
type CRISandboxes = runtime.CRISandboxes

var _ SandboxLister = (*CRISandboxes)(nil)

// ErrHandlerInUse: pod sandboxes on the node use a handler the operation
// would remove (an uninstall, or a plan that drops or renames a handler).
// Nothing was changed; the error is an *InUseError naming them.
var ErrHandlerInUse = runtime.ErrHandlerInUse

// InUseError names the handlers in use and the sandboxes that use them.
type InUseError = runtime.InUseError

// inUseCheck refuses, before anything changes, to remove a handler a pod
// sandbox on the node uses: the handler, its binary and its bundle stay
// while a pod runs with them (an uninstall that strands a running pod
// loses its data: exec, a container's restart and the sandbox's own
// teardown all need the handler).
type inUseCheck struct{ noUndo }

func (inUseCheck) name() string { return "checked-in-use" }

func (inUseCheck) do(ctx context.Context, r *run) error {
	dropped := r.dropped()
	err := runtime.CheckNotInUse(ctx, r.rt.Sandboxes, dropped)
	if !errors.Is(err, runtime.ErrNoAnswer) {
		return err
	}
	// The runtime is down (an uninstall may be what repairs it): its
	// shims outlive it, so any still running from the bundle hold it.
	if pids := bundle.Running(r.i.paths(), r.prev.BundleDir); len(pids) > 0 {
		return &InUseError{Handlers: dropped, Pids: pids}
	}
	r.i.log().Warn("the runtime does not answer, and no shim process runs from the Shim's bundle: removing its handlers",
		"shim", r.plan.Shim.Name, "handlers", dropped, "err", err)
	return nil
}

// dropped are the handlers the Shim had that the operation removes: all
// of them on an uninstall, those the plan no longer has on an install.
func (r *run) dropped() []string {
	if r.plan.Operation == plan.OpUninstall {
		return r.prev.handlers()
	}
	keep := r.handlerNames()
	var out []string
	for _, h := range r.prev.handlers() {
		if !slices.Contains(keep, h) {
			out = append(out, h)
		}
	}
	return out
}

// retire decides, as an install commits, when the Shim's current
// version became current (when the install switched the bundle to it:
// the sandboxes created since, its canary's among them, run it) and which
// earlier versions stay: the version the install switched away from joins
// the retired ones, and a retired
// version stays while a ready pod sandbox of the Shim's handlers that was
// created while it was current runs (its shim started from its files).
// A runtime that cannot be asked keeps them all; one that runs no pods
// (offline) none.
func (r *run) retire(ctx context.Context) (since time.Time, kept []RetiredVersion) {
	now := r.bundle.SwitchedAt
	if now.IsZero() {
		now = time.Now().UTC()
	}
	since, all := r.prev.CurrentSince, slices.Clone(r.prev.Retired)
	switch {
	case !r.had || r.prev.Version == "":
		since = now
	case r.prev.Version != r.rec.Version:
		all = append(all, RetiredVersion{Version: r.prev.Version, Since: r.prev.CurrentSince, Until: now})
		since = now
	}
	all = slices.DeleteFunc(all, func(v RetiredVersion) bool { return v.Version == r.rec.Version })
	if len(all) == 0 || r.rt.Sandboxes == nil {
		return since, nil
	}
	list, err := r.rt.Sandboxes.Sandboxes(ctx)
	if err != nil {
		r.i.log().Warn("keeping the Shim's earlier bundle versions: cannot list the pod sandboxes", "shim", r.plan.Shim.Name, "err", err)
		return since, all
	}
	running := runtime.Using(list, append(r.handlerNames(), r.dropped()...))
	for _, v := range all {
		i := slices.IndexFunc(running, func(sb plan.Sandbox) bool { return !sb.Created.Before(v.Since) && sb.Created.Before(v.Until) })
		if i >= 0 {
			r.i.log().Info("keeping an earlier bundle version: a pod sandbox started from it runs", "shim", r.plan.Shim.Name, "version", v.Version, "sandbox", running[i].String())
			kept = append(kept, v)
		}
	}
	return since, kept
}
