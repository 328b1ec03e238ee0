package crioconfig

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/shimkit/shimkit/containerdconfig"
)

// Change is an edit on disk, pending until it is committed or rolled back.
// While it is pending a journal in the state directory records, for each
// file it wrote (the drop-in and the ownership record), whether the file
// existed, what it held and what shimkit wrote, so that Restore can undo
// the edit after a crash.
//
// Rollback never overwrites what someone else wrote: a file gets its
// original bytes back only while it holds exactly what shimkit wrote;
// otherwise it is left as it is and the error wraps ErrConcurrentEdit.
type Change struct {
	files    []string // node paths, for Files
	commit   func() error
	rollback func() error
	done     bool
}

// Changed reports whether any file changed, that is whether CRI-O must be
// restarted.
func (c *Change) Changed() bool { return len(c.files) > 0 }

// Files lists the changed files as paths on the node: shimkit's drop-in
// and its ownership record in the state directory.
func (c *Change) Files() []string { return c.files }

// Commit makes the change permanent (its journal goes).
func (c *Change) Commit() error {
	if c.done || c.commit == nil {
		c.done = true
		return nil
	}
	c.done = true
	return c.commit()
}

// Rollback undoes the change byte for byte: each file that still holds
// what the Change wrote gets its former bytes back (a file it created is
// removed, one it removed is written again). A file changed by someone
// else since is left as it is, the journal stays for Restore, and the
// error wraps ErrConcurrentEdit.
func (c *Change) Rollback() error {
	if c.done {
		return errors.New("crioconfig: change already committed or rolled back")
	}
	c.done = true
	if c.rollback == nil {
		return nil
	}
	return c.rollback()
}

// fileEdit is one file of a change, as the journal records it.
type fileEdit struct {
	Path    string `json:"path"` // on the node
	Existed bool   `json:"existed"`
	Before  []byte `json:"before,omitempty"`
	Removed bool   `json:"removed,omitempty"`
	After   []byte `json:"after,omitempty"`
}

// journal is <state>/<handler>.journal.json while a change is pending.
type journal struct {
	Format  int        `json:"shimkitCRIOJournal"`
	Handler string     `json:"handler"`
	ID      string     `json:"id"`
	Files   []fileEdit `json:"files"`
}

const journalFormat = 1

// apply records the edits in the handler's journal, then makes them, and
// returns the pending Change. An edit that fails is undone at once.
func (t Target) apply(handler string, edits []fileEdit) (*Change, error) {
	if len(edits) == 0 {
		return &Change{}, nil
	}
	if err := t.checkLayout(); err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	j := journal{Format: journalFormat, Handler: handler, ID: hex.EncodeToString(id), Files: edits}
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return nil, err
	}
	jpath := t.local(t.journalPath(handler))
	if err := containerdconfig.WriteFileAtomic(jpath, append(data, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("crioconfig: journal %s: %w", t.journalPath(handler), err)
	}
	c := &Change{
		commit:   func() error { return removeFile(jpath) },
		rollback: func() error { return t.undo(jpath, edits) },
	}
	for i, e := range edits {
		c.files = append(c.files, e.Path)
		if err := t.write(e); err != nil {
			c.done = true
			if uerr := t.undo(jpath, edits[:i+1]); uerr != nil {
				return nil, fmt.Errorf("crioconfig: write %s: %w; undoing failed too: %w", e.Path, err, uerr)
			}
			return nil, fmt.Errorf("crioconfig: write %s: %w (undone)", e.Path, err)
		}
	}
	return c, nil
}

// write makes one edit: the drop-in through a temporary file in the state
// directory, the state directory's own files in place.
func (t Target) write(e fileEdit) error {
	if e.Removed {
		return removeFile(t.local(e.Path))
	}
	if filepath.Dir(e.Path) == filepath.Clean(t.stateDir()) {
		return containerdconfig.WriteFileAtomic(t.local(e.Path), e.After, 0o600)
	}
	return writeVia(t.local(t.stateDir()), t.local(e.Path), e.After, 0o644)
}

// undo puts back, newest first, every file that holds what the edits
// wrote, and removes the journal when all are undone.
func (t Target) undo(jpath string, edits []fileEdit) error {
	var errs []error
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		cur, exists, err := readOptional(t.local(e.Path))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case exists == e.Existed && (!exists || bytes.Equal(cur, e.Before)):
			continue // already as before
		case e.Removed && exists, !e.Removed && (!exists || !bytes.Equal(cur, e.After)):
			errs = append(errs, fileErr(e.Path, ErrConcurrentEdit, "changed since shimkit wrote it; left as it is"))
			continue
		}
		restore := fileEdit{Path: e.Path, Removed: !e.Existed, After: e.Before}
		if err := t.write(restore); err != nil {
			errs = append(errs, fmt.Errorf("crioconfig: restore %s: %w", e.Path, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return removeFile(jpath)
}

// Restore undoes the change a crash left pending for the handler (its
// journal in the state directory), with Rollback's rule, and removes the
// journal. restored reports whether there was one.
func Restore(t Target, handler string) (restored bool, err error) {
	jpath := t.local(t.journalPath(handler))
	data, ok, err := readOptional(jpath)
	if err != nil || !ok {
		return false, err
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return false, fileErr(t.journalPath(handler), ErrPending, "journal does not parse: %v", err)
	}
	if j.Format != journalFormat {
		return false, fileErr(t.journalPath(handler), ErrPending, "journal format %d is not %d", j.Format, journalFormat)
	}
	if err := t.undo(jpath, j.Files); err != nil {
		return false, err
	}
	return true, nil
}

// ForgetPending drops the journal of the handler, accepting the files as
// they are: the way out after Rollback or Restore returned
// ErrConcurrentEdit and someone decided the files are right as they are.
// Until then a new change of the handler is refused (ErrPending).
func ForgetPending(t Target, handler string) error {
	if err := validName(handler); err != nil {
		return err
	}
	return removeFile(t.local(t.journalPath(handler)))
}
