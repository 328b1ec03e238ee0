package installer

import (
	"cmp"
	"context"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// SandboxLister lists the pod sandboxes the node's runtime has, ready or
// stopped and not yet removed, each with its handler. CRISandboxes is the
// real one; installertest.FakeSandboxes the in-memory one of tests.
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
	running := func() []int { return bundle.Running(r.i.paths(), r.prev.BundleDir) }
	return runtime.Guard(ctx, r.rt.Sandboxes, r.dropped(), running, r.i.log().With("shim", r.plan.Shim.Name))
}

// dropped are the handlers the Shim had that the operation removes (an
// uninstall has none left).
func (r *run) dropped() []string { return runtime.Dropped(r.prev.handlers(), r.handlerNames()) }

// retire decides, as an install commits, when the Shim's current version
// became current and which earlier versions stay (bundle.Retire): those a
// ready sandbox of the Shim's handlers may still run from.
func (r *run) retire(ctx context.Context) (time.Time, []RetiredVersion) {
	now := cmp.Or(r.bundle.SwitchedAt, time.Now().UTC())
	prev := r.prev.Version
	if !r.had {
		prev = ""
	}
	var running func() ([]time.Time, error)
	if r.rt.Sandboxes != nil {
		running = func() ([]time.Time, error) {
			all, err := r.rt.Sandboxes.Sandboxes(ctx)
			var created []time.Time
			for _, sb := range runtime.Using(all, append(r.handlerNames(), r.dropped()...)) {
				created = append(created, sb.Created)
			}
			return created, err
		}
	}
	since, kept, err := bundle.Retire(prev, r.rec.Version, r.prev.CurrentSince, now, r.prev.Retired, running)
	if err != nil {
		r.i.log().Warn("keeping the Shim's earlier bundle versions: cannot list the pod sandboxes", "shim", r.plan.Shim.Name, "err", err)
	}
	return since, kept
}
