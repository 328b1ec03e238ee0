package installer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
// survive upgrades. A name that exists there already is left alone.
type linkShims struct{ created []string }

func (*linkShims) name() string { return "linked" }

func (s *linkShims) do(_ context.Context, r *run) error {
	want := r.i.wantedLinks(r.handlers())
	r.rec.Links = nil
	todo := map[string]string{}
	for link, target := range want {
		switch cur, err := os.Readlink(r.i.local(link)); {
		case err == nil && cur == target:
			r.rec.Links = append(r.rec.Links, link) // ours, from before
		case errors.Is(err, fs.ErrNotExist):
			todo[link] = target
		}
	}
	if len(todo) == 0 {
		return nil
	}
	r.pending.Links = todo
	if err := r.savePending(); err != nil {
		return err
	}
	for _, link := range slices.Sorted(maps.Keys(todo)) {
		local := r.i.local(link)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(todo[link], local); err != nil {
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
		errs = append(errs, unlinkOurs(r.i.local(l), r.pending.Links[l]))
	}
	return errors.Join(errs...)
}

// wantedLinks maps LinkDir/<binary> to the binary, for every handler whose
// runtime_path is a shim binary named as containerd looks for it.
func (i *Installer) wantedLinks(handlers []containerdconfig.RuntimeHandler) map[string]string {
	out := map[string]string{}
	dir := i.linkDir()
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
