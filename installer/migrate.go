package installer

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
)

// rcmHome is where runtime-class-manager keeps its binaries and lock file,
// now and in its KWasm era.
type rcmHome struct{ dir, lock string }

var rcmHomes = []rcmHome{{"/opt/rcm", "rcm-lock.json"}, {"/opt/kwasm", "kwasm-lock.json"}}

// rcmLock is runtime-class-manager's lock file: per runtime, the binary it
// wrote and its sha256.
type rcmLock struct {
	Shims map[string]rcmLockEntry `json:"shims"`
}

type rcmLockEntry struct {
	SHA256 string `json:"sha256"`
	Path   string `json:"path"`
}

// fromRCM recognises a handler table runtime-class-manager wrote: its
// runtime_type is the absolute path of its binary for that runtime.
func fromRCM(handler string) func(map[string]any) bool {
	return func(table map[string]any) bool {
		rt, _ := table["runtime_type"].(string)
		for _, h := range rcmHomes {
			if rt == path.Join(h.dir, "bin", "containerd-shim-"+handler) {
				return true
			}
		}
		return false
	}
}

// rcmFiles are the files runtime-class-manager edits that are neither the
// one shimkit edits nor the root config: k0s's drop-in.
var rcmFiles = map[string][]string{containerdconfig.PresetK0s: {"/etc/k0s/containerd.d/config.toml"}}

// removeLeftovers removes what runtime-class-manager left for the
// migrated handler once the Shim's install is committed: its binary (only
// when it still is what its lock file says it wrote) and its lock entry,
// then the lock file and directories it leaves empty.
func (c rcmCleanup) removeLeftovers(handler string) error {
	var errs []error
	for _, h := range rcmHomes {
		errs = append(errs, c.removeHome(h, handler))
	}
	return errors.Join(errs...)
}

// rcmCleanup is the migration role after commit: what
// runtime-class-manager left on the node goes.
type rcmCleanup struct{ i *Installer }

func (c rcmCleanup) removeHome(h rcmHome, handler string) error {
	i := c.i
	lockPath := i.paths().local(path.Join(h.dir, h.lock))
	data, err := os.ReadFile(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var lock rcmLock
	if err := json.Unmarshal(data, &lock); err != nil {
		return fmt.Errorf("%s: %w", path.Join(h.dir, h.lock), err)
	}
	entry, ok := lock.Shims[handler]
	bin := path.Join(h.dir, "bin", "containerd-shim-"+handler)
	if !ok || entry.Path != bin {
		return nil
	}
	if content, err := os.ReadFile(i.paths().local(bin)); err == nil {
		sum := sha256.Sum256(content)
		if !strings.EqualFold(hex.EncodeToString(sum[:]), entry.SHA256) {
			return fmt.Errorf("%w: %s is not what runtime-class-manager's lock file says it wrote; left as it is", ErrConflict, bin)
		}
		if err := os.Remove(i.paths().local(bin)); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
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
	_ = os.Remove(i.paths().local(path.Join(h.dir, "bin"))) // only when empty
	_ = os.Remove(i.paths().local(h.dir))
	return nil
}
