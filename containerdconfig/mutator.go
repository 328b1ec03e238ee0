package containerdconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
)

// Mutator is one edit of a node's containerd configuration. Apply makes the
// edit on disk and returns a Change to commit or roll back; when nothing had
// to change, the Change says so and containerd needs no restart.
type Mutator interface {
	Apply(ctx context.Context) (*Change, error)
}

var (
	_ Mutator = (*Install)(nil)
	_ Mutator = (*Uninstall)(nil)
)

// Install registers a runtime handler.
type Install struct {
	Target  Target
	Handler RuntimeHandler
}

// NewInstall returns a Mutator that registers h on the target.
func NewInstall(t Target, h RuntimeHandler) *Install { return &Install{Target: t, Handler: h} }

// Apply registers the handler. Bad input (a file that does not parse, an
// invalid handler, a template shimkit does not understand, a collision)
// returns an error naming the file, line and key, and no file is touched.
func (i *Install) Apply(ctx context.Context) (*Change, error) {
	if err := i.Handler.Validate(); err != nil {
		return nil, err
	}
	return i.Target.apply(ctx, handlerSubject(i.Handler.Name), func(p plan, data []byte) ([]byte, bool, error) {
		if p.rendered != nil && p.rendered.HasHandler(i.Handler.Name) {
			generated, err := checkGenerated(p, data, i.Handler)
			if err != nil || generated {
				return data, false, err // the distribution renders it as wanted: nothing to do
			}
		}
		return addHandler(p.nodePath, data, i.Handler, p.opts)
	})
}

// Uninstall removes a runtime handler that shimkit registered.
type Uninstall struct {
	Target Target
	Name   string
}

// NewUninstall returns a Mutator that removes the handler name, leaving the
// files as they were before it was installed.
func NewUninstall(t Target, name string) *Uninstall { return &Uninstall{Target: t, Name: name} }

// Apply removes the handler. A handler shimkit did not write is left alone
// and the Change reports nothing changed.
func (u *Uninstall) Apply(ctx context.Context) (*Change, error) {
	return u.Target.apply(ctx, handlerSubject(u.Name), func(p plan, data []byte) ([]byte, bool, error) {
		return RemoveHandler(p.nodePath, data, u.Name)
	})
}

// checkGenerated refuses to add a table the distribution already renders
// itself (k3s adds runtimes for shims it finds): the rendered config would
// define it twice. It reports generated when the distribution's own table
// is what was asked for, so the edit is a no-op. template is the masked
// template the edit works on.
func checkGenerated(p plan, template []byte, h RuntimeHandler) (generated bool, err error) {
	blocks, err := findBlocks(p.nodePath, template, scan(template))
	if err != nil {
		return false, err
	}
	if _, ours := blockByID(blocks, handlerID(h.Name)); ours {
		return false, nil // rendered from shimkit's own block
	}
	body, err := detectStyle(template).renderHandler(p.rendered.runtimesPath(), h)
	if err != nil {
		return false, err
	}
	want, err := desiredHandler(body, p.rendered.runtimesPath(), h.Name)
	if err != nil {
		return false, err
	}
	if reflect.DeepEqual(p.rendered.Handler(h.Name), want) {
		return true, nil
	}
	return false, &FileError{Path: p.rendered.path, Key: dottedKey(append(p.rendered.runtimesPath(), h.Name)),
		Err: fmt.Errorf("%w: the distribution already generates this handler with other settings; adding it to the template would define it twice", ErrConflict)}
}

type editFunc func(p plan, data []byte) (out []byte, changed bool, err error)

// apply plans, edits in memory, verifies, and only then writes.
func (t Target) apply(ctx context.Context, s subject, edit editFunc) (*Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := t.planFor(s)
	if err != nil {
		return nil, err
	}
	before, existed, err := readOptional(p.local)
	if err != nil {
		return nil, err
	}
	data := before
	if !existed {
		if p.seed == nil {
			return nil, &FileError{Path: p.nodePath, Err: os.ErrNotExist}
		}
		data = p.seed
	}
	out, changed, err := editFile(p, data, edit)
	if err != nil || !changed {
		return &Change{}, err
	}
	fc := fileChange{nodePath: p.nodePath, local: p.local, before: before, existed: existed, after: out}
	if p.seed != nil && bytes.Equal(out, p.seed) {
		fc.after = nil // only the seed is left: the file was shimkit's
	}
	if existed && fc.after != nil && bytes.Equal(before, fc.after) {
		return &Change{}, nil
	}
	c := &Change{files: []fileChange{fc}}
	if err := c.write(); err != nil {
		return nil, err
	}
	return c, nil
}

func editFile(p plan, data []byte, edit editFunc) ([]byte, bool, error) {
	if !p.template {
		return edit(p, data)
	}
	masked, err := maskTemplate(p.nodePath, data)
	if err != nil {
		return nil, false, err
	}
	out, changed, err := edit(p, masked.data)
	if err != nil || !changed {
		return data, false, err
	}
	out, err = masked.unmask(out)
	if err != nil {
		return nil, false, &FileError{Path: p.nodePath, Err: err}
	}
	return out, true, nil
}

// fileChange is one file a Change wrote.
type fileChange struct {
	nodePath string
	local    string
	before   []byte // the original bytes; nil when the file did not exist
	existed  bool
	after    []byte // nil: the file is removed
}

// Change is an edit on disk, pending until it is committed or rolled back.
// Until then a backup of each changed file sits next to it (with the suffix
// .shimkit-backup), so that Recover can undo the edit after a crash.
type Change struct {
	files []fileChange
	done  bool
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
	for i, f := range c.files {
		err := f.writeBackup()
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

// writeBackup keeps the file's bytes from before the change. When a backup
// is already there, an earlier uncommitted Change of the same operation
// made it (several handlers edited in one file): it holds the file as it
// was before the whole operation, which is what Restore must put back, so
// it is kept.
func (f fileChange) writeBackup() error {
	if !f.existed {
		return nil
	}
	if _, ok, err := readOptional(f.local + backupSuffix); err != nil || ok {
		return err
	}
	return WriteFileAtomic(f.local+backupSuffix, f.before, 0o600)
}

func (f fileChange) writeAfter() error {
	if f.after == nil {
		return removeFile(f.local)
	}
	if err := os.MkdirAll(filepath.Dir(f.local), 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(f.local, f.after, 0o644)
}

// Commit makes the change permanent by dropping the backups.
func (c *Change) Commit() error {
	if c.done {
		return nil
	}
	var errs []error
	for _, f := range c.files {
		if f.existed {
			errs = append(errs, removeFile(f.local+backupSuffix))
		}
	}
	c.done = true
	return errors.Join(errs...)
}

// Rollback restores every file byte for byte (or removes the ones the change
// created) and drops the backups.
func (c *Change) Rollback() error {
	if c.done {
		return errors.New("change already committed or rolled back")
	}
	var errs []error
	for i := len(c.files) - 1; i >= 0; i-- {
		f := c.files[i]
		if !f.existed {
			errs = append(errs, removeFile(f.local))
			continue
		}
		if err := WriteFileAtomic(f.local, f.before, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", f.nodePath, err))
			continue
		}
		// The backup of an earlier Change of the same file (see
		// writeBackup) stays until that Change is rolled back too.
		if backup, ok, err := readOptional(f.local + backupSuffix); err != nil {
			errs = append(errs, err)
		} else if ok && bytes.Equal(backup, f.before) {
			errs = append(errs, removeFile(f.local+backupSuffix))
		}
	}
	c.done = true
	return errors.Join(errs...)
}

// Restore undoes a Change that a crash left pending: when a backup of the
// file at path (on this machine) exists, it is put back byte for byte.
func Restore(path string) (restored bool, err error) {
	data, ok, err := readOptional(path + backupSuffix)
	if err != nil || !ok {
		return false, err
	}
	if err := WriteFileAtomic(path, data, 0o644); err != nil {
		return false, err
	}
	return true, removeFile(path + backupSuffix)
}
