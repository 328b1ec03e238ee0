package containerdconfig

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"
)

// fileChange is one file a Change wrote.
type fileChange struct {
	nodePath string
	local    string
	template bool   // a k3s/RKE2 template: parsed masked
	before   []byte // the original bytes; nil when the file did not exist
	existed  bool
	seed     []byte // what a file the Change created was edited from
	after    []byte // what the Change wrote, unless removed
	removed  bool   // the Change removed the file
	id       string // its record in the journal
	// createdDirs are the directories (node paths, deepest first) the
	// Change created for the file: a drop-in directory that was not there.
	createdDirs []string
}

// Change is an edit on disk, pending until it is committed or rolled back.
// Until then a journal next to each changed file (its name with the
// suffix .shimkit-journal) records what the file held and what shimkit
// wrote, so that Restore can undo the edit after a crash.
//
// Neither Rollback nor Restore ever overwrites what someone else wrote: a
// file is put back whole only while it holds exactly what shimkit wrote;
// otherwise only shimkit's own blocks are undone, and when even that would
// touch another writer's edit the file is left as it is and the error wraps
// ErrConcurrentEdit.
type Change struct {
	files []fileChange
	done  bool
}

// CreatedDirs lists the directories (node paths, deepest first) the Change
// created for the files it wrote, such as a drop-in directory that did not
// exist. Rollback and Restore remove them again when empty; after a Commit
// the caller records them, to remove them when a later Change leaves them
// empty (RemoveCreatedDir).
func (c *Change) CreatedDirs() []string {
	var out []string
	for _, f := range c.files {
		for _, d := range f.createdDirs {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// RemoveCreatedDir removes the directory at nodePath under root when it is
// empty, and reports whether it is gone (removed now, or already absent):
// a directory someone put a file into since stays, and so does the
// record of it.
func RemoveCreatedDir(root, nodePath string) (gone bool, err error) {
	err = os.Remove(hostPath(root, nodePath))
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return true, nil
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		return false, nil
	}
	return false, err
}

// missingDirs lists the directories of nodePath (deepest first) that do not
// exist on this machine (local is nodePath there).
func missingDirs(local, nodePath string) []string {
	var out []string
	for dir, ldir := path.Dir(nodePath), filepath.Dir(local); dir != "/" && dir != "."; dir, ldir = path.Dir(dir), filepath.Dir(ldir) {
		if _, err := os.Lstat(ldir); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		out = append(out, dir)
	}
	return out
}

// removeDirs removes the directories a change created for the file at
// local (deepest first) while they are empty and the file is gone.
func removeDirs(local string, createdDirs []string) {
	if _, err := os.Lstat(local); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	ldir := filepath.Dir(local)
	for range createdDirs {
		if err := os.Remove(ldir); err != nil {
			return
		}
		ldir = filepath.Dir(ldir)
	}
}

// Changed reports whether any file changed, that is whether containerd
// must be restarted.
func (c *Change) Changed() bool { return len(c.files) > 0 }

// Files lists the changed files as paths on the node.
func (c *Change) Files() []string {
	var out []string
	for _, f := range c.files {
		out = append(out, f.nodePath)
	}
	return out
}

func (c *Change) write() error {
	for i := range c.files {
		f := &c.files[i]
		err := f.record()
		if err == nil {
			err = f.writeAfter()
		}
		if err != nil {
			c.files = c.files[:i+1]
			if rerr := c.Rollback(); rerr != nil {
				return fmt.Errorf("write %s: %w; rollback failed too: %w", f.nodePath, err, rerr)
			}
			return fmt.Errorf("write %s: %w (restored)", f.nodePath, err)
		}
	}
	return nil
}

// record adds the change to the file's journal, durably, before the file
// is written.
func (f *fileChange) record() error {
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	f.id = hex.EncodeToString(id)
	f.createdDirs = missingDirs(f.local, f.nodePath)
	if err := os.MkdirAll(filepath.Dir(f.local), 0o755); err != nil {
		return err
	}
	return updateJournal(f.local, f.nodePath, f.template, func(j *journal) (bool, error) {
		if n := len(j.Changes); n > 0 {
			// An earlier Change of the same operation, not committed yet:
			// the file must still hold what it wrote.
			if last := j.Changes[n-1]; last.Removed != !f.existed || !bytes.Equal(last.After, f.before) {
				return false, &FileError{Path: f.nodePath, Err: fmt.Errorf("%w: %s records an unfinished change and the file no longer holds what it wrote; run Restore first",
					ErrConcurrentEdit, filepath.Base(f.local+journalSuffix))}
			}
		}
		j.Changes = append(j.Changes, f.entry())
		return true, nil
	})
}

func (f fileChange) writeAfter() error {
	if f.removed {
		return removeFile(f.local)
	}
	if err := os.MkdirAll(filepath.Dir(f.local), 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(f.local, f.after, 0o644)
}

func (f fileChange) entry() journalEntry {
	return journalEntry{ID: f.id, Existed: f.existed, Before: f.before, Seed: f.seed, Removed: f.removed, After: f.after, CreatedDirs: f.createdDirs}
}

// forget drops the change's record from the journal.
func (f fileChange) forget() error {
	return updateJournal(f.local, f.nodePath, f.template, func(j *journal) (bool, error) {
		return j.drop(f.id), nil
	})
}

// Commit makes the change permanent by dropping its records from the
// journals (and a journal with its last record).
func (c *Change) Commit() error {
	if c.done {
		return nil
	}
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.forget(), removeLegacyBackup(f.local))
	}
	c.done = true
	return errors.Join(errs...)
}

// Rollback undoes the change, newest file first. A file that still holds
// exactly what the Change wrote gets its original bytes back (a file the
// Change created is removed, one it removed is written again). A file
// another writer changed since keeps their edit: only the shimkit blocks
// the Change touched are undone (a block it appended is cut, one it
// updated gets its former bytes, an adopted handler its original text),
// each only while it is byte for byte what the Change wrote. When that is
// not possible (the block was edited, the file is gone or no longer parses,
// a file the Change removed was written again) the file is left exactly as
// it is, its journal stays for Restore, and the error is a *FileError
// naming the file that wraps ErrConcurrentEdit.
func (c *Change) Rollback() error {
	if c.done {
		return errors.New("change already committed or rolled back")
	}
	var errs []error
	for i := len(c.files) - 1; i >= 0; i-- {
		f := c.files[i]
		if err := undoFile(f.local, f.nodePath, f.template, []journalEntry{f.entry()}); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, f.forget())
		removeDirs(f.local, f.createdDirs) // after the journal, which sits there too
	}
	c.done = true
	return errors.Join(errs...)
}

// undoFile undoes the changes (oldest first) on the file at local with
// the compare-and-swap rule, and writes the result when it differs.
func undoFile(local, nodePath string, template bool, changes []journalEntry) error {
	data, exists, err := readOptional(local)
	if err != nil {
		return err
	}
	cur := fileState{data, exists}
	st := cur
	for k := len(changes) - 1; k >= 0; k-- {
		if st, err = undo(nodePath, template, changes[k], st); err != nil {
			return err
		}
	}
	switch {
	case st.exists == cur.exists && bytes.Equal(st.data, cur.data):
		return nil
	case !st.exists:
		return removeFile(local)
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	if err := WriteFileAtomic(local, st.data, 0o644); err != nil {
		return fmt.Errorf("restore %s: %w", nodePath, err)
	}
	return nil
}

// Restore undoes what a crash left pending on the file at path (on this
// machine), with the rule of Change.Rollback: the changes its journal
// records are undone, newest first, by putting the original back while the
// file holds exactly what shimkit wrote (removing a file the operation
// created), and otherwise by undoing only shimkit's blocks. Then the
// journal is removed. When another writer's edit stands in the way, the
// file is left as it is, the journal stays, and the error wraps
// ErrConcurrentEdit. A .shimkit-backup that shimkit versions before the
// journal left is put back as they did. restored reports whether a pending
// change was found and undone.
func Restore(path string) (restored bool, err error) {
	j, ok, err := readJournal(path)
	if err != nil {
		return false, err
	}
	if ok {
		if err := undoFile(path, j.file(path), j.Template, j.Changes); err != nil {
			return false, err
		}
		if err := removeFile(path + journalSuffix); err != nil {
			return true, err
		}
		if len(j.Changes) > 0 {
			removeDirs(path, j.Changes[0].CreatedDirs)
		}
		restored = true
	}
	data, ok, err := readOptional(path + backupSuffix)
	if err != nil || !ok {
		return restored, err
	}
	if err := WriteFileAtomic(path, data, 0o644); err != nil {
		return restored, err
	}
	return true, removeFile(path + backupSuffix)
}

// ForgetPending drops the journal of the file at path (on this machine),
// and a .shimkit-backup an older shimkit left, accepting the file as it is:
// what the pending changes wrote stays, and Restore has nothing left to
// undo. It is the way out after Restore or Rollback returned
// ErrConcurrentEdit and someone decided the file is right as it is;
// until then the journal stays, and a new Change of the file is refused.
func ForgetPending(path string) error {
	return errors.Join(removeFile(path+journalSuffix), removeLegacyBackup(path))
}

// removeLegacyBackup drops a .shimkit-backup of an older shimkit, as its
// Commit did.
func removeLegacyBackup(local string) error {
	if _, err := os.Lstat(local + backupSuffix); err != nil {
		return nil
	}
	return removeFile(local + backupSuffix)
}
