package installer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const prevSuffix = ".shimkit-prev"

// chooseBinary picks the shim binary among the fetched executables: the one
// containerd looks for (want), or the only one there is.
func chooseBinary(executables []string, want string) (string, error) {
	for _, e := range executables {
		if filepath.Base(e) == want {
			return e, nil
		}
	}
	if len(executables) == 1 {
		return executables[0], nil
	}
	return "", fmt.Errorf("artifact has no %s among %v", want, executables)
}

// placeBinary moves src over dst atomically (rename, never O_TRUNC, so a
// shim that is running keeps its old file). An existing dst is first
// hard-linked to dst.shimkit-prev, returned as the backup ("" when dst is
// new).
func placeBinary(src, dst string) (backup string, err error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if _, err := os.Lstat(dst); err == nil {
		backup = dst + prevSuffix
		_ = os.Remove(backup)
		if err := os.Link(dst, backup); err != nil {
			return "", fmt.Errorf("back up %s: %w", dst, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.Chmod(src, 0o755); err != nil {
		return backup, err
	}
	// The content must be on disk before the name points at it.
	if err := syncPath(src); err != nil {
		return backup, err
	}
	if err := os.Rename(src, dst); err != nil {
		return backup, fmt.Errorf("place %s: %w", dst, err)
	}
	return backup, syncPath(filepath.Dir(dst))
}

// restoreBinary puts a backup back over dst, or removes dst when there was
// none.
func restoreBinary(dst, backup string) error {
	if backup == "" {
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if _, err := os.Stat(backup); errors.Is(err, fs.ErrNotExist) {
		return nil // already restored
	}
	return os.Rename(backup, dst)
}

// linkBinary puts a symlink to target at link unless something (ours or
// the user's) is already there. It reports whether it created one.
func linkBinary(target, link string) (bool, error) {
	if _, err := os.Lstat(link); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return false, err
	}
	if err := os.Symlink(target, link); err != nil {
		return false, err
	}
	return true, nil
}

// unlinkOurs removes link when it is a symlink to target.
func unlinkOurs(link, target string) error {
	cur, err := os.Readlink(link)
	if err != nil || cur != target {
		return nil
	}
	return os.Remove(link)
}

// syncPath fsyncs a file or a directory.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
