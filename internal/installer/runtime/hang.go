package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
)

// UnitStater tells the state of the runtime's unit: systemd's Restarter
// has the role.
type UnitStater interface {
	UnitState(ctx context.Context) (unit, active, sub string, err error)
}

// HangError is a restart that failed while the node showed something
// stuck: the runtime's unit not running, or shim processes that cannot
// answer. Its message says what, after the restart's own error.
type HangError struct {
	Hang plan.Hang
	Err  error
}

func (e *HangError) Error() string { return e.Err.Error() + "; on the node: " + e.Hang.String() }
func (e *HangError) Unwrap() error { return e.Err }

// ErrShimStuck: a shim process of the node's containerd is stopped or
// stuck in the kernel, so shimkit does not restart containerd: at its
// start containerd gives each shim 5 s to answer and deletes the task of
// one that does not (measured on containerd 2.2.9: the pod's containers
// were gone), or waits for ever on one that answers only in part
// (containerd #13848). The error is a *HangError naming the processes.
var ErrShimStuck = errors.New("a shim process on the node cannot answer")

// shimRecheck is how long after finding stuck shims the node is looked
// at again: only those stuck both times count (a shim in an
// uninterruptible sleep for a moment is not stuck).
const shimRecheck = time.Second

// CheckShims refuses, before a restart, while a shim process of the
// node's containerd cannot answer (ErrShimStuck in a *HangError). A node
// without /proc to read, or a CRI-O node (CRI-O restores its pods from
// its own state, without asking conmon), has none.
func (n *Node) CheckShims(ctx context.Context) error {
	if n.Host == "" || n.Kind != plan.RuntimeContainerd {
		return nil
	}
	first := containerdShims(StuckShims(n.Host))
	if len(first) == 0 {
		return nil
	}
	t := time.NewTimer(shimRecheck)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	var stuck []plan.StuckShim
	for _, s := range containerdShims(StuckShims(n.Host)) {
		if slices.ContainsFunc(first, func(f plan.StuckShim) bool { return f.PID == s.PID }) {
			stuck = append(stuck, s)
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	return &HangError{Hang: plan.Hang{Shims: stuck}, Err: fmt.Errorf("%w: restarting %s now would end their pods or keep it from starting; nothing was restarted", ErrShimStuck, n.name())}
}

// containerdShims keeps containerd's shims (not CRI-O's conmon).
func containerdShims(all []plan.StuckShim) []plan.StuckShim {
	return slices.DeleteFunc(all, func(s plan.StuckShim) bool { return s.Command == "conmon" })
}

// diagnoseTimeout bounds what a diagnosis asks systemd: the restart's own
// context may have run out already.
const diagnoseTimeout = 5 * time.Second

// diagnosed returns err with what the node shows (a *HangError) when the
// runtime's unit is not running or a shim process is stuck; err as it is
// otherwise, or when the node cannot be looked at.
func diagnosed(ctx context.Context, n *Node, err error) error {
	if err == nil || n.Host == "" && n.Unit == nil {
		return err
	}
	var h plan.Hang
	if n.Unit != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), diagnoseTimeout)
		defer cancel()
		h.Unit, h.ActiveState, h.SubState, _ = n.Unit.UnitState(ctx)
	}
	if n.Host != "" {
		h.Shims = StuckShims(n.Host)
	}
	if len(h.Shims) == 0 && (h.Unit == "" || h.ActiveState == "active" && h.SubState == "running") {
		return err
	}
	return &HangError{Hang: h, Err: err}
}

// StuckShims lists the shim processes under root's /proc (containerd's
// shims and CRI-O's conmon) that are stopped (T, t) or in an
// uninterruptible sleep (D), each with the task it serves and, when the
// task's bundle names it, its pod. None when /proc cannot be read.
func StuckShims(root string) []plan.StuckShim {
	stats, _ := filepath.Glob(filepath.Join(root, "proc", "[0-9]*", "stat"))
	var out []plan.StuckShim
	for _, p := range stats {
		dir := filepath.Dir(p)
		s, ok := stuckShim(root, dir)
		if ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b plan.StuckShim) int { return a.PID - b.PID })
	return out
}

// stuckShim reads one process of /proc (dir): a shim that cannot answer,
// or not.
func stuckShim(root, dir string) (plan.StuckShim, bool) {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return plan.StuckShim{}, false
	}
	// "<pid> (<comm>) <state> ...": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || end+2 >= len(stat) {
		return plan.StuckShim{}, false
	}
	comm, state := string(stat[open+1:end]), stat[end+2]
	isShim := strings.HasPrefix(comm, "containerd-shim") || comm == "conmon"
	if !isShim || !slices.Contains([]byte("TtD"), state) {
		return plan.StuckShim{}, false
	}
	pid, _ := strconv.Atoi(filepath.Base(dir))
	s := plan.StuckShim{PID: pid, Command: comm, State: stateNames[state]}
	cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) > 0 && args[0] != "" {
		s.Command = filepath.Base(args[0])
	}
	if comm == "conmon" {
		s.ID = flagValue(args, "-c", "--cid")
		s.Pod = podOf(root, flagValue(args, "-b", "--bundle"))
		return s, true
	}
	s.ID = flagValue(args, "-id")
	// containerd starts a shim in its task's bundle directory, which is
	// under its state directory, where its socket is by default.
	cwd, _ := os.Readlink(filepath.Join(dir, "cwd"))
	s.Pod = podOf(root, cwd)
	if addr := flagValue(args, "-address"); s.Pod == "" && addr != "" && s.ID != "" {
		s.Pod = podOf(root, filepath.Join(filepath.Dir(addr), "io.containerd.runtime.v2.task", flagValue(args, "-namespace"), s.ID))
	}
	return s, true
}

// stateNames are the kernel's names of the states a stuck shim is in.
var stateNames = map[byte]string{'T': "T (stopped)", 't': "t (tracing stop)", 'D': "D (disk sleep)"}

// flagValue returns the value of the first of names in args ("-id x",
// "-id=x", "--cid x").
func flagValue(args []string, names ...string) string {
	for k, a := range args {
		for _, n := range names {
			switch {
			case a == n && k+1 < len(args):
				return args[k+1]
			case strings.HasPrefix(a, n+"="):
				return strings.TrimPrefix(a, n+"=")
			}
		}
	}
	return ""
}

// podOf reads the OCI config (config.json) of a task's bundle (a node
// path, or one already under root) for the pod it belongs to:
// "<namespace>/<name>" from containerd's CRI annotations or CRI-O's; ""
// when it has none.
func podOf(root, bundle string) string {
	if bundle == "" {
		return ""
	}
	if !strings.HasPrefix(bundle, filepath.Clean(root)+"/") {
		bundle = filepath.Join(root, bundle)
	}
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return ""
	}
	var spec struct {
		Annotations map[string]string `json:"annotations"`
	}
	if json.Unmarshal(data, &spec) != nil {
		return ""
	}
	a := spec.Annotations
	for _, keys := range [][2]string{
		{"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name"},
		{"io.kubernetes.pod.namespace", "io.kubernetes.pod.name"},
	} {
		if a[keys[0]] != "" && a[keys[1]] != "" {
			return a[keys[0]] + "/" + a[keys[1]]
		}
	}
	return ""
}

// Details are what a failure carries for the result: the sandboxes that
// use a handler (an *InUseError), what hangs on the node (a *HangError).
func Details(err error) (inUse []plan.Sandbox, hang *plan.Hang) {
	if ie := (*InUseError)(nil); errors.As(err, &ie) {
		inUse = ie.Sandboxes
	}
	if he := (*HangError)(nil); errors.As(err, &he) {
		hang = &he.Hang
	}
	return inUse, hang
}
