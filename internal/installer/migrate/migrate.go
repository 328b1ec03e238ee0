package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// home is where runtime-class-manager keeps its binaries and lock file,
// now and in its KWasm era.
type home struct{ dir, lock string }

var homes = []home{{"/opt/rcm", "rcm-lock.json"}, {"/opt/kwasm", "kwasm-lock.json"}}

// lockFile is runtime-class-manager's lock file: per runtime, the binary
// it wrote and its sha256.
type lockFile struct {
	Shims map[string]lockEntry `json:"shims"`
}

type lockEntry struct {
	SHA256 string `json:"sha256"`
	Path   string `json:"path"`
}

// FromRCM recognises a handler table runtime-class-manager wrote: its
// runtime_type is the absolute path of its binary for that runtime.
func FromRCM(handler string) func(map[string]any) bool {
	return func(table map[string]any) bool {
		rt, _ := table["runtime_type"].(string)
		for _, h := range homes {
			if rt == path.Join(h.dir, "bin", "containerd-shim-"+handler) {
				return true
			}
		}
		return false
	}
}

// Files are the files runtime-class-manager edits on a preset's node that
// are neither the one shimkit edits nor the root config: k0s's drop-in.
func Files(preset string) []string {
	if preset == containerdconfig.PresetK0s {
		return []string{"/etc/k0s/containerd.d/config.toml"}
	}
	return nil
}

// RemoveLeftovers removes what runtime-class-manager left for the
// migrated handler once the Shim's install is committed: its binary (only
// when it still is what its lock file says it wrote) and its lock entry,
// then the lock file and directories it leaves empty.
func RemoveLeftovers(l layout.Layout, handler string) error {
	var errs []error
	for _, h := range homes {
		errs = append(errs, removeHome(l, h, handler))
	}
	return errors.Join(errs...)
}

func removeHome(l layout.Layout, h home, handler string) error {
	lockPath := l.Local(path.Join(h.dir, h.lock))
	data, err := os.ReadFile(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var lock lockFile
	if err := json.Unmarshal(data, &lock); err != nil {
		return fmt.Errorf("%s: %w", path.Join(h.dir, h.lock), err)
	}
	entry, ok := lock.Shims[handler]
	bin := path.Join(h.dir, "bin", "containerd-shim-"+handler)
	if !ok || entry.Path != bin {
		return nil
	}
	if err := removeBinary(l, bin, entry.SHA256); err != nil {
		return err
	}
	delete(lock.Shims, handler)
	if len(lock.Shims) > 0 {
		out, err := json.MarshalIndent(lock, "", " ")
		if err != nil {
			return err
		}
		return containerdconfig.WriteFileAtomic(lockPath, out, 0o644)
	}
	if err := os.Remove(lockPath); err != nil {
		return err
	}
	_ = os.Remove(l.Local(path.Join(h.dir, "bin"))) // only when empty
	_ = os.Remove(l.Local(h.dir))
	return nil
}

// removeBinary removes the binary at node path bin when its sha256 is
// sum; a binary that is not is a conflict, left as it is.
func removeBinary(l layout.Layout, bin, sum string) error {
	content, err := os.ReadFile(l.Local(bin))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	got := sha256.Sum256(content)
	if !strings.EqualFold(hex.EncodeToString(got[:]), sum) {
		return fmt.Errorf("%w: %s is not what runtime-class-manager's lock file says it wrote; left as it is", ownership.ErrConflict, bin)
	}
	return os.Remove(l.Local(bin))
}
