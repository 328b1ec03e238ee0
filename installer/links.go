package installer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
)

// containerdShims are the binaries of containerd's own runtimes: never
// linked, whatever a plan says.
var containerdShims = []string{"containerd-shim-runc-v1", "containerd-shim-runc-v2", "containerd-shim-runhcs-v1"}

// linkShims puts a symlink to each handler's shim binary in LinkDir, so that
// containerd 1.6 (which ignores runtime_path for pod sandboxes) finds it on
// its PATH. The links point at the bundle's "current" directory, so they
// survive upgrades. Which links it creates was decided by preflight: only
// names that no file on containerd's PATH has.
type linkShims struct{ created []string }

func (*linkShims) name() string { return "linked" }

func (s *linkShims) do(_ context.Context, r *run) error {
	r.rec.Links = slices.Clone(r.ownLinks)
	if len(r.newLinks) == 0 {
		return nil
	}
	r.pending.Links = r.newLinks
	if err := r.savePending(); err != nil {
		return err
	}
	for _, link := range slices.Sorted(maps.Keys(r.newLinks)) {
		local := r.i.paths().local(link)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(r.newLinks[link], local); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
		s.created, r.changed = append(s.created, link), true
		r.rec.Links = append(r.rec.Links, link)
	}
	slices.Sort(r.rec.Links)
	return nil
}

func (s *linkShims) undo(_ context.Context, r *run) error {
	var errs []error
	for _, l := range s.created {
		errs = append(errs, unlinkOurs(r.i.paths().local(l), r.pending.Links[l]))
	}
	return errors.Join(errs...)
}

// containerdPath is the PATH containerd runs with (systemd's default): where
// it looks for shim binaries by name.
var containerdPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// linkPlan decides a run's PATH links: the links role of preflight.
type linkPlan struct{ r *run }

// plan decides the PATH links of the install: a link this Shim made
// before is kept; a name no file on containerd's PATH has is linked; a taken
// name (another Shim's link, the admin's binary) is never replaced or
// shadowed. containerd 1.7 and later honour runtime_path, so they need no
// link and the name is skipped; containerd 1.6 does need it, so a taken
// name is a conflict there (and when the version cannot be read).
func (lp linkPlan) plan(ctx context.Context) error {
	r := lp.r
	r.newLinks, r.ownLinks = map[string]string{}, nil
	pf, ok := unwrap(r.rt).(pathFinder)
	if !ok {
		return nil // the runtime honours runtime_path: no links
	}
	l := r.i.paths()
	want := wantedLinks(l, r.handlers())
	var errs []error
	for _, link := range slices.Sorted(maps.Keys(want)) {
		target := want[link]
		if lp.skipDetected(ctx, pf, link) {
			continue
		}
		if cur, err := os.Readlink(r.i.paths().local(link)); err == nil && cur == target {
			r.ownLinks = append(r.ownLinks, link)
			continue
		}
		taken := onPath(l, path.Base(link))
		if taken == "" {
			r.newLinks[link] = target
			continue
		}
		version, needed := pf.needsLinks(ctx)
		if !needed {
			r.i.log().Info("not linking the shim: containerd honours runtime_path and the name is taken", "link", link, "taken", taken, "containerd", version)
			continue
		}
		errs = append(errs, fmt.Errorf("%w: %s is already on containerd's PATH and shimkit will not replace or shadow it, but containerd %s finds pod sandbox shims only by name on its PATH",
			ErrConflict, taken, orDefault(version, "(version unknown)")))
	}
	return errors.Join(errs...)
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
func (lp linkPlan) skipDetected(ctx context.Context, pf pathFinder, link string) bool {
	r := lp.r
	if !pf.generatesRuntimeFor(path.Base(link)) {
		return false
	}
	if r.i.Offline {
		return true
	}
	if version, needed := pf.needsLinks(ctx); needed && version != "" {
		return false
	}
	r.i.log().Info("not linking the shim: the distribution would render a runtime of its own for it found on its PATH", "link", link, "preset", r.rt.preset())
	return true
}

// onPath returns the first node path on containerd's PATH (and LinkDir)
// where a file named bin exists, or "".
func onPath(l layout, bin string) string {
	for _, dir := range append([]string{l.linkDir()}, containerdPath...) {
		p := path.Join(dir, bin)
		if _, err := os.Lstat(l.local(p)); err == nil {
			return p
		}
	}
	return ""
}

// versionBefore17 reports whether a containerd version string ("1.6.20",
// "v2.2.1", "1.6.20~ds1") is older than 1.7; an unreadable one counts as
// old.
func versionBefore17(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &major, &minor); err != nil {
		return true
	}
	return major < 1 || major == 1 && minor < 7
}

// wantedLinks maps LinkDir/<binary> to the binary, for every handler whose
// runtime_path is a shim binary named as containerd looks for it.
func wantedLinks(l layout, handlers []containerdconfig.RuntimeHandler) map[string]string {
	out := map[string]string{}
	dir := l.linkDir()
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

// unlinkOurs removes link when it is a symlink to target.
func unlinkOurs(link, target string) error {
	cur, err := os.Readlink(link)
	if err != nil || cur != target {
		return nil
	}
	return os.Remove(link)
}

// unlinkUnder removes link when it is a symlink into dir.
func unlinkUnder(link, dir string) error {
	cur, err := os.Readlink(link)
	if err != nil || dir == "" || !strings.HasPrefix(cur, dir+"/") {
		return nil
	}
	return os.Remove(link)
}
