package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/installer/plan"
)

// SandboxLister lists the pod sandboxes the node's runtime has: package
// installer's SandboxLister.
type SandboxLister interface {
	Sandboxes(ctx context.Context) ([]plan.Sandbox, error)
}

var _ SandboxLister = (*CRISandboxes)(nil)

// CRISandboxes asks the runtime over CRI (ListPodSandbox) on its socket:
// every sandbox it has, ready or stopped and not yet removed, with the
// handler it runs with. containerd and CRI-O both answer it.
type CRISandboxes struct {
	// Socket is the path of the runtime's socket on this machine.
	Socket string
	// Timeout bounds one call; default 10s.
	Timeout time.Duration
}

// Sandboxes lists the runtime's pod sandboxes, sorted by namespace, name
// and handler.
func (c *CRISandboxes) Sandboxes(ctx context.Context) ([]plan.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.Timeout, 10*time.Second))
	defer cancel()
	conn, err := grpc.NewClient("unix://"+c.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("listing pod sandboxes on %s: %w", c.Socket, err)
	}
	defer conn.Close()
	list, err := runtimeapi.NewRuntimeServiceClient(conn).ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if status.Code(err) == codes.Unavailable {
		return nil, fmt.Errorf("%w: CRI ListPodSandbox on %s: %w", ErrNoAnswer, c.Socket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("CRI ListPodSandbox on %s: %w", c.Socket, err)
	}
	out := make([]plan.Sandbox, 0, len(list.GetItems()))
	for _, sb := range list.GetItems() {
		m := sb.GetMetadata()
		out = append(out, plan.Sandbox{Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUid(),
			Handler: sb.GetRuntimeHandler(), Ready: sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY,
			Created: time.Unix(0, sb.GetCreatedAt()).UTC()})
	}
	slices.SortFunc(out, func(a, b plan.Sandbox) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Handler, b.Handler))
	})
	return out, nil
}

// Using returns the ready sandboxes of all that run with one of handlers:
// a stopped sandbox runs no shim (its pod is being torn down, or ended),
// and the runtime removes it without the handler.
func Using(all []plan.Sandbox, handlers []string) []plan.Sandbox {
	var out []plan.Sandbox
	for _, sb := range all {
		if sb.Ready && slices.Contains(handlers, sb.Handler) {
			out = append(out, sb)
		}
	}
	return out
}

// ErrNoAnswer: the runtime does not answer on its socket (it is down, or
// not started): its sandboxes cannot be listed.
var ErrNoAnswer = errors.New("the runtime does not answer")

// ErrHandlerInUse: pod sandboxes on the node use a handler the operation
// would remove; nothing was changed (InUseError names them).
var ErrHandlerInUse = errors.New("handler in use by pod sandboxes")

// InUseError says which of Handlers the runtime's sandboxes still use;
// or, when the runtime does not answer, the shim processes that still
// run from the Shim's bundle (Pids: a shim outlives its runtime).
type InUseError struct {
	Handlers  []string
	Sandboxes []plan.Sandbox
	Pids      []int
}

// maxNamed is how many sandboxes an InUseError's message names.
const maxNamed = 5

func (e *InUseError) Error() string {
	if len(e.Sandboxes) == 0 {
		return fmt.Sprintf("%s %s: the runtime does not answer, and shim processes run from the Shim's bundle (pids %v): it stays, with its binary and bundle, until they are gone",
			plural(len(e.Handlers), "handler", "handlers"), strings.Join(e.Handlers, ", "), e.Pids)
	}
	names := make([]string, 0, maxNamed)
	for _, sb := range e.Sandboxes[:min(len(e.Sandboxes), maxNamed)] {
		names = append(names, sb.String())
	}
	more := ""
	if n := len(e.Sandboxes) - maxNamed; n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("%s %s used by %d pod sandboxes on the node (%s%s): it stays, with its binary and bundle, until they are gone",
		plural(len(e.Handlers), "handler", "handlers"), strings.Join(e.Handlers, ", "), len(e.Sandboxes), strings.Join(names, ", "), more)
}

func (e *InUseError) Unwrap() error { return ErrHandlerInUse }

func plural(n int, one, many string) string {
	if n == 1 {
		return one + " is"
	}
	return many + " are"
}

// CheckNotInUse fails with an InUseError when a sandbox the lister lists
// runs with one of handlers; a nil lister (an offline root filesystem)
// runs none.
func CheckNotInUse(ctx context.Context, l SandboxLister, handlers []string) error {
	if l == nil || len(handlers) == 0 {
		return nil
	}
	all, err := l.Sandboxes(ctx)
	if err != nil {
		return err
	}
	if using := Using(all, handlers); len(using) > 0 {
		var used []string
		for _, sb := range using {
			if !slices.Contains(used, sb.Handler) {
				used = append(used, sb.Handler)
			}
		}
		slices.Sort(used)
		return &InUseError{Handlers: used, Sandboxes: using}
	}
	return nil
}

// Dropped are the handlers of had that keep lacks.
func Dropped(had, keep []string) []string {
	var out []string
	for _, h := range had {
		if !slices.Contains(keep, h) {
			out = append(out, h)
		}
	}
	return out
}

// Guard refuses (InUseError) to remove handlers that a ready sandbox the
// lister lists runs with. When the runtime does not answer (it is down,
// and an uninstall may be what repairs it), its shims outlive it: the
// processes still running from the Shim's bundle (running: their pids)
// hold the handlers; with none, the handlers go, and log says so.
func Guard(ctx context.Context, l SandboxLister, handlers []string, running func() []int, log *slog.Logger) error {
	err := CheckNotInUse(ctx, l, handlers)
	if !errors.Is(err, ErrNoAnswer) {
		return err
	}
	if pids := running(); len(pids) > 0 {
		return &InUseError{Handlers: handlers, Pids: pids}
	}
	log.Warn("the runtime does not answer, and no shim process runs from the Shim's bundle: removing its handlers", "handlers", handlers, "err", err)
	return nil
}
