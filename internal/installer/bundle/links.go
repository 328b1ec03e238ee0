package bundle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// containerdShims are the binaries of containerd's own runtimes: never
// linked, whatever a plan says.
var containerdShims = []string{"containerd-shim-runc-v1", "containerd-shim-runc-v2", "containerd-shim-runhcs-v1"}

// containerdPath is the PATH containerd runs with (systemd's default): where
// it looks for shim binaries by name.
var containerdPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// PathFinder is a runtime that may find shim binaries by name on its PATH
// (containerd 1.6, and a distribution that renders a runtime table for a
// binary it finds there).
type PathFinder interface {
	// NeedsLinks reports whether the runtime needs shim binaries on its
	// PATH, and its version.
	NeedsLinks(ctx context.Context) (version string, needed bool)
	// GeneratesRuntimeFor reports whether the distribution renders a
	// runtime table of its own for a binary of that name on its PATH.
	GeneratesRuntimeFor(bin string) bool
}

// Links are the link state of an install: the PATH links to create (node
// path to target) and those the Shim made before and keeps.
type Links struct {
	New map[string]string
	Own []string
}

// Linker decides an install's PATH links.
type Linker struct {
	Layout layout.Layout
	// Finder is the runtime's role; nil: it honours runtime_path, no links.
	Finder  PathFinder
	Offline bool
	Log     *slog.Logger
	// Preset names the runtime's layout in messages.
	Preset string
}

// Plan decides the PATH links of the handlers: a link this Shim made
// before is kept; a name no file on containerd's PATH has is linked; a
// taken name (another Shim's link, the admin's binary) is never replaced
// or shadowed. containerd 1.7 and later honour runtime_path, so they need
// no link and the name is skipped; containerd 1.6 does need it, so a taken
// name is a conflict there (and when the version cannot be read).
func (lk Linker) Plan(ctx context.Context, handlers []containerdconfig.RuntimeHandler) (Links, error) {
	out := Links{New: map[string]string{}}
	if lk.Finder == nil {
		return out, nil // the runtime honours runtime_path: no links
	}
	l := lk.Layout
	want := wantedLinks(l, handlers)
	var errs []error
	for _, link := range slices.Sorted(maps.Keys(want)) {
		target := want[link]
		if lk.skipDetected(ctx, link) {
			continue
		}
		if cur, err := os.Readlink(l.Local(link)); err == nil && cur == target {
			out.Own = append(out.Own, link)
			continue
		}
		taken := onPath(l, path.Base(link))
		if taken == "" {
			out.New[link] = target
			continue
		}
		version, needed := lk.Finder.NeedsLinks(ctx)
		if !needed {
			lk.Log.Info("not linking the shim: containerd honours runtime_path and the name is taken", "link", link, "taken", taken, "containerd", version)
			continue
		}
		errs = append(errs, fmt.Errorf("%w: %s is already on containerd's PATH and shimkit will not replace or shadow it, but containerd %s finds pod sandbox shims only by name on its PATH",
			ownership.ErrConflict, taken, cmp.Or(version, "(version unknown)")))
	}
	return out, errors.Join(errs...)
}

// skipDetected reports whether the link is left out because the
// distribution (k3s, RKE2) would find the binary on its PATH and render a
// runtime table of its own for it: where shimkit's handler goes to a
// template (k3s without the config-v3.toml.d import), containerd would then
// refuse a config that defines the runtime twice; where it goes to a
// drop-in, the handler would be partly k3s's. The distributions that
// detect shims bundle containerd 1.7 or later, which finds the shim by
// runtime_path; only a containerd known to be older (a k3s from before
// detection) gets the link.
func (lk Linker) skipDetected(ctx context.Context, link string) bool {
	if !lk.Finder.GeneratesRuntimeFor(path.Base(link)) {
		return false
	}
	if lk.Offline {
		return true
	}
	if version, needed := lk.Finder.NeedsLinks(ctx); needed && version != "" {
		return false
	}
	lk.Log.Info("not linking the shim: the distribution would render a runtime of its own for it found on its PATH", "link", link, "preset", lk.Preset)
	return true
}

// Make creates the new links, in order; it returns those it created (or
// began to), for an undo.
func (ls Links) Make(l layout.Layout) ([]string, error) {
	var created []string
	for _, link := range slices.Sorted(maps.Keys(ls.New)) {
		local := l.Local(link)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return created, err
		}
		if err := os.Symlink(ls.New[link], local); err != nil {
			return created, fmt.Errorf("link %s: %w", link, err)
		}
		created = append(created, link)
	}
	return created, nil
}

// onPath returns the first node path on containerd's PATH (and LinkDir)
// where a file named bin exists, or "".
func onPath(l layout.Layout, bin string) string {
	for _, dir := range append([]string{l.LinkDir()}, containerdPath...) {
		p := path.Join(dir, bin)
		if _, err := os.Lstat(l.Local(p)); err == nil {
			return p
		}
	}
	return ""
}

// wantedLinks maps LinkDir/<binary> to the binary, for every handler whose
// runtime_path is a shim binary named as containerd looks for it.
func wantedLinks(l layout.Layout, handlers []containerdconfig.RuntimeHandler) map[string]string {
	out := map[string]string{}
	dir := l.LinkDir()
	if dir == "" {
		return out
	}
	for _, h := range handlers {
		bin := h.BinaryName()
		if bin == "" || h.RuntimePath == "" || path.Base(h.RuntimePath) != bin || slices.Contains(containerdShims, bin) {
			continue
		}
		out[path.Join(dir, bin)] = h.RuntimePath
	}
	return out
}

// UnlinkDetected removes the links (node paths) into the bundle directory
// dir whose binary the distribution renders a runtime table of its own
// for (generates), and returns them with their targets, for Relink.
func UnlinkDetected(l layout.Layout, links []string, dir string, generates func(bin string) bool) (map[string]string, error) {
	removed := map[string]string{}
	for _, lk := range links {
		if !generates(path.Base(lk)) {
			continue
		}
		cur, err := os.Readlink(l.Local(lk))
		if err != nil || dir == "" || !strings.HasPrefix(cur, dir+"/") {
			continue
		}
		if err := os.Remove(l.Local(lk)); err != nil {
			return removed, fmt.Errorf("unlink %s: %w", lk, err)
		}
		removed[lk] = cur
	}
	return removed, nil
}

// Relink puts back links (node path to target) that are not there.
func Relink(l layout.Layout, links map[string]string) error {
	var errs []error
	for lk, target := range links {
		if err := os.Symlink(target, l.Local(lk)); err != nil && !errors.Is(err, fs.ErrExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// UnlinkOurs removes link (local) when it is a symlink to target.
func UnlinkOurs(link, target string) error {
	cur, err := os.Readlink(link)
	if err != nil || cur != target {
		return nil
	}
	return os.Remove(link)
}

// UnlinkUnder removes link (local) when it is a symlink into dir.
func UnlinkUnder(link, dir string) error {
	cur, err := os.Readlink(link)
	if err != nil || dir == "" || !strings.HasPrefix(cur, dir+"/") {
		return nil
	}
	return os.Remove(link)
}

// Running returns the processes of the node whose executable lies under
// the bundle directory dir (a node path), read from the host's /proc
// under the layout's root (none when it cannot be read: a root without
// the host's /proc).
func Running(l layout.Layout, dir string) []int {
	if dir == "" {
		return nil
	}
	exes, _ := filepath.Glob(filepath.Join(l.Local("/proc"), "[0-9]*", "exe"))
	var out []int
	for _, link := range exes {
		exe, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(exe, dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(link))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
