// Package atomicfile replaces and removes files so that a reader, or a
// crash, sees either the old bytes or the new, never a mix: the
// containerd and CRI-O config writers' one way to write a node's files.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with data through a temporary file in tmpDir (""
// : path's own directory), which must be on path's filesystem: it writes
// and fsyncs the temporary file, gives it the mode and owner of the file
// it replaces (or perm for a new file), renames it over path and fsyncs
// both directories. A tmpDir of its own keeps even a temporary file out
// of a directory whose every file a runtime loads (CRI-O's crio.conf.d).
func Write(tmpDir, path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if tmpDir == "" {
		tmpDir = dir
	}
	uid, gid := -1, -1
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := os.CreateTemp(tmpDir, "."+filepath.Base(path)+".shimkit-tmp-")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // a no-op once renamed
	if err := fill(tmp, data, perm, uid, gid); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	if tmpDir != dir {
		return errors.Join(SyncDir(dir), SyncDir(tmpDir))
	}
	return SyncDir(dir)
}

// fill writes data into the temporary file with its mode and owner (uid
// -1: the process's; a chown refused is left at that) and fsyncs it.
func fill(tmp *os.File, data []byte, perm fs.FileMode, uid, gid int) error {
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if uid >= 0 {
		if err := tmp.Chown(uid, gid); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
	}
	return tmp.Sync()
}

// Remove removes path (absent is fine) and fsyncs its directory.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, so that a rename or removal in it is
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
