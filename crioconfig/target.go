package crioconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Default paths of a CRI-O node (pkg/config/config_unix.go of CRI-O v1.34:
// CrioConfigPath, CrioConfigDropInPath).
const (
	DefaultConfig    = "/etc/crio/crio.conf"
	DefaultDropInDir = "/etc/crio/crio.conf.d"
	// DefaultStateDir holds shimkit's ownership records, journals and
	// temporary files: beside the drop-in directory (so that a rename
	// from it into the drop-in directory stays on one filesystem) and
	// never inside it, where CRI-O would load them.
	DefaultStateDir = "/etc/crio/shimkit"
)

// Target names the files of one CRI-O node. Paths are as seen on the
// node; Root, when set, is where the node's root filesystem is mounted
// (an image builder's rootfs), and every path is read and written under
// it.
type Target struct {
	Root      string
	Config    string // crio --config; DefaultConfig when empty
	DropInDir string // crio --config-dir; DefaultDropInDir when empty
	StateDir  string // DefaultStateDir when empty; must not be under DropInDir
}

func (t Target) config() string    { return or(t.Config, DefaultConfig) }
func (t Target) dropInDir() string { return or(t.DropInDir, DefaultDropInDir) }
func (t Target) stateDir() string  { return or(t.StateDir, DefaultStateDir) }

// DropInPath returns the node path of shimkit's drop-in for the handler.
func (t Target) DropInPath(handler string) string {
	return filepath.Join(t.dropInDir(), DropInName(handler))
}

// local returns where a node path is on this machine.
func (t Target) local(nodePath string) string {
	if t.Root == "" {
		return nodePath
	}
	return filepath.Join(t.Root, nodePath)
}

func (t Target) recordPath(handler string) string {
	return filepath.Join(t.stateDir(), handler+".owner.json")
}

func (t Target) journalPath(handler string) string {
	return filepath.Join(t.stateDir(), handler+".journal.json")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkLayout refuses a state directory inside the drop-in directory
// (CRI-O would load shimkit's records and temporary files), creates both,
// and checks that they are on one filesystem, so that a file renamed from
// one into the other appears whole.
func (t Target) checkLayout() error {
	if err := t.checkStateOutside(); err != nil {
		return err
	}
	drop, state := filepath.Clean(t.dropInDir()), filepath.Clean(t.stateDir())
	var devs [2]uint64
	for i, d := range []string{drop, state} {
		if err := os.MkdirAll(t.local(d), 0o755); err != nil {
			return err
		}
		dev, err := deviceOf(t.local(d))
		if err != nil {
			return err
		}
		devs[i] = dev
	}
	if devs[0] != devs[1] {
		return fmt.Errorf("crioconfig: state directory %s and drop-in directory %s are on different filesystems; a drop-in could not be renamed into place whole", state, drop)
	}
	return nil
}

// checkStateOutside refuses a state directory at or under the drop-in
// directory: CRI-O would load shimkit's records, journals and temporary
// files.
func (t Target) checkStateOutside() error {
	drop, state := filepath.Clean(t.dropInDir()), filepath.Clean(t.stateDir())
	if rel, err := filepath.Rel(drop, state); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return fmt.Errorf("crioconfig: state directory %s is inside the drop-in directory %s, which CRI-O loads whole", state, drop)
	}
	return nil
}

// readOptional reads a file that may be missing.
func readOptional(path string) (data []byte, exists bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}
