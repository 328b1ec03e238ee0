package crioconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
)

// HandlerWriter is the role a node installer needs from a runtime's config
// writer: add or update one handler, or remove it, as a Change to commit
// or roll back. Writer is the real one, Fake the in-memory double.
type HandlerWriter interface {
	Install(ctx context.Context, h RuntimeHandler) (*Change, error)
	Uninstall(ctx context.Context, name string) (*Change, error)
}

var _ HandlerWriter = (*Writer)(nil)

// Writer writes shimkit's drop-ins of one owner (a Shim) on a CRI-O node.
type Writer struct {
	Target Target
	// Owner is who the drop-ins are written for; it is kept in the
	// ownership record, and another owner's drop-in is never touched.
	Owner string
	// Locate, when set, returns where the file at a node path is on this
	// machine for the binary check (runtime_path, runtime_config_path):
	// an installer that writes the handler before it switches its bundle
	// into place points it at the staged file. Nil: under Target.Root.
	Locate func(nodePath string) string
}

// NewWriter returns a Writer of owner's handlers on the target.
func NewWriter(t Target, owner string) *Writer { return &Writer{Target: t, Owner: owner} }

// record is <state>/<handler>.owner.json: who wrote the drop-in and the
// sha256 of what was written.
type record struct {
	Format  int    `json:"shimkitCRIOOwner"`
	Handler string `json:"handler"`
	Owner   string `json:"owner"`
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Install writes h into shimkit's drop-in, after checking, before anything
// is written: the handler (Validate), its binary on disk (checkBinary),
// that every file CRI-O reads parses, that no other file defines a
// handler of that name (ErrForeignHandler) and it is not the default
// runtime (ErrReserved), and that the drop-in, when there is one, is this
// owner's and unchanged since (ErrNotOurs). A drop-in that already holds
// exactly h changes nothing (Changed() == false).
func (w *Writer) Install(ctx context.Context, h RuntimeHandler) (*Change, error) {
	h = h.withDefaults()
	edits, err := w.planInstall(h)
	if err != nil {
		return nil, err
	}
	return w.Target.apply(h.Name, edits)
}

// Holds reports whether the node holds exactly the drop-in Install(h)
// would write, this owner's and unchanged since: an Install of h would
// change no file, and CRI-O would need no restart for it. An error says
// why it could not tell (a drop-in that is not this owner's, a record
// that does not parse).
func (w *Writer) Holds(h RuntimeHandler) (bool, error) {
	h = h.withDefaults()
	cur, exists, _, err := w.owned(h.Name)
	if err != nil || !exists {
		return false, err
	}
	return string(cur) == string(Render(w.Owner, h)), nil
}

// planInstall decides the edits of Install from one read of the node.
func (w *Writer) planInstall(h RuntimeHandler) ([]fileEdit, error) {
	if err := checkOwner(w.Owner); err != nil {
		return nil, err
	}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	t := w.Target
	if err := t.checkStateOutside(); err != nil {
		return nil, err
	}
	if err := checkBinary(w.locate, h); err != nil {
		return nil, err
	}
	if err := w.checkNotPending(h.Name); err != nil {
		return nil, err
	}
	snap, err := Scan(t)
	if err != nil {
		return nil, err
	}
	ours := t.DropInPath(h.Name)
	switch def := snap.DefaultRuntime(); h.Name {
	case def:
		return nil, fmt.Errorf("%w: %q is CRI-O's default runtime on this node (default_runtime)", ErrReserved, h.Name)
	case builtinRuntime:
		return nil, fmt.Errorf("%w: %q is CRI-O's built-in handler (its default configuration defines it on every node)", ErrReserved, h.Name)
	}
	for _, f := range snap.DefiningFiles(h.Name) {
		if f != ours {
			return nil, fileErr(f, ErrForeignHandler, "defines the runtime handler %q; shimkit neither adds a second one nor takes it over", h.Name)
		}
	}
	cur, exists, rec, err := w.owned(h.Name)
	if err != nil {
		return nil, err
	}
	data := Render(w.Owner, h)
	if err := verifyRendered(data, h); err != nil {
		return nil, err
	}
	newRec, err := w.recordBytes(h.Name, data)
	if err != nil {
		return nil, err
	}
	var edits []fileEdit
	if !exists || string(cur) != string(data) {
		edits = append(edits, fileEdit{Path: ours, Existed: exists, Before: cur, After: data})
	}
	if rec == nil || string(rec) != string(newRec) {
		edits = append([]fileEdit{{Path: t.recordPath(h.Name), Existed: rec != nil, Before: rec, After: newRec}}, edits...)
	}
	return edits, nil
}

// Uninstall removes the owner's drop-in of the handler and its record. A
// drop-in at that path without a record, of another owner, or changed
// since shimkit wrote it is ErrNotOurs and stays. Nothing to remove
// changes nothing.
func (w *Writer) Uninstall(ctx context.Context, name string) (*Change, error) {
	if err := checkOwner(w.Owner); err != nil {
		return nil, err
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := w.checkNotPending(name); err != nil {
		return nil, err
	}
	cur, exists, rec, err := w.owned(name)
	if err != nil {
		return nil, err
	}
	t := w.Target
	var edits []fileEdit
	if exists {
		edits = append(edits, fileEdit{Path: t.DropInPath(name), Existed: true, Before: cur, Removed: true})
	}
	if rec != nil {
		edits = append(edits, fileEdit{Path: t.recordPath(name), Existed: true, Before: rec, Removed: true})
	}
	return t.apply(name, edits)
}

// owned reads shimkit's drop-in of the handler and its ownership record,
// and refuses a drop-in that is not this owner's as written.
func (w *Writer) owned(name string) (cur []byte, exists bool, rec []byte, err error) {
	t := w.Target
	path := t.DropInPath(name)
	cur, exists, err = readOptional(t.local(path))
	if err != nil {
		return nil, false, nil, err
	}
	rec, recExists, err := readOptional(t.local(t.recordPath(name)))
	if err != nil {
		return nil, false, nil, err
	}
	if !recExists {
		if exists {
			return nil, false, nil, fileErr(path, ErrNotOurs, "shimkit has no record of writing it (%s is missing)", t.recordPath(name))
		}
		return nil, false, nil, nil
	}
	var r record
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, false, nil, fileErr(t.recordPath(name), ErrNotOurs, "ownership record does not parse: %v", err)
	}
	switch {
	case r.Owner != w.Owner:
		return nil, false, nil, fileErr(path, ErrNotOurs, "written by shimkit for %s, not %s", r.Owner, w.Owner)
	case exists && digest(cur) != r.SHA256:
		return nil, false, nil, fileErr(path, ErrNotOurs, "changed since shimkit wrote it (%s, recorded %s)", digest(cur), r.SHA256)
	}
	return cur, exists, rec, nil
}

// locate is where checkBinary looks for a node path.
func (w *Writer) locate(nodePath string) string {
	if w.Locate != nil {
		return w.Locate(nodePath)
	}
	return w.Target.local(nodePath)
}

func (w *Writer) recordBytes(name string, data []byte) ([]byte, error) {
	b, err := json.MarshalIndent(record{Format: 1, Handler: name, Owner: w.Owner, File: w.Target.DropInPath(name), SHA256: digest(data)}, "", "  ")
	return append(b, '\n'), err
}

func (w *Writer) checkNotPending(name string) error {
	p := w.Target.journalPath(name)
	if _, err := os.Stat(w.Target.local(p)); err == nil {
		return fileErr(p, ErrPending, "a change of handler %q was interrupted; run Restore first", name)
	}
	return nil
}

// checkBinary checks on disk what CRI-O only logs a warning for: the
// runtime_path exists, is a regular file (after symlinks) and executable,
// and a vm handler's runtime_config_path exists.
func checkBinary(local func(string) string, h RuntimeHandler) error {
	fi, err := os.Stat(local(h.RuntimePath))
	switch {
	case err != nil:
		return fileErr(h.RuntimePath, ErrBinary, "runtime_path of handler %q: %v", h.Name, err)
	case !fi.Mode().IsRegular():
		return fileErr(h.RuntimePath, ErrBinary, "runtime_path of handler %q is a %s, not a regular file", h.Name, modeName(fi.Mode()))
	case fi.Mode().Perm()&0o111 == 0:
		return fileErr(h.RuntimePath, ErrBinary, "runtime_path of handler %q is not executable (mode %v)", h.Name, fi.Mode().Perm())
	}
	if h.RuntimeConfigPath != "" {
		if _, err := os.Stat(local(h.RuntimeConfigPath)); err != nil {
			return fileErr(h.RuntimeConfigPath, ErrBinary, "runtime_config_path of handler %q: %v", h.Name, err)
		}
	}
	return nil
}

func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
