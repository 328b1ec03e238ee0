package containerdconfig

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// EvictHandler returns data without a handler that another installer
// wrote, so that a migration the admin asked for can replace it with
// shimkit's: the handler's tables (which must follow each other, as for
// AdoptHandler) are cut, with the comment lines right above the first of
// them (such an installer's marker) and the blank line before those.
// Everything else stays byte for byte, and the result must parse and keep
// every other setting.
//
// match is shown the handler's table as parsed (runtime_type, options, ...)
// and must accept it: it is how the caller recognises what that installer
// wrote. A handler it does not accept is refused with a *FileError wrapping
// ErrConflict, and so is one defined inline or in separate places. A
// handler in a shimkit block is never evicted. changed is false when the
// file does not define the handler outside shimkit's blocks.
func EvictHandler(path string, data []byte, name string, match func(table map[string]any) bool) (out []byte, changed bool, err error) {
	return evictHandler(path, data, name, match, 0)
}

func evictHandler(path string, data []byte, name string, match func(map[string]any) bool, version int) ([]byte, bool, error) {
	cfg, err := parse(path, data, version)
	if err != nil {
		return nil, false, err
	}
	exprs := scan(data)
	blocks, err := findBlocks(path, data, exprs)
	if err != nil {
		return nil, false, err
	}
	if _, ours := blockByID(blocks, handlerID(name)); ours || !cfg.HasHandler(name) {
		return data, false, nil
	}
	key := append(slices.Clone(cfg.runtimesPath()), name)
	if !match(cfg.Handler(name)) {
		fe := foreignHandler(path, exprs, blocks, key, name)
		fe.Err = fmt.Errorf("%w: handler %s here was not written by the installer being migrated from; it is not removed", ErrConflict, name)
		return nil, false, fe
	}
	start, end, err := adoptSpan(path, exprs, blocks, key, name)
	if err != nil {
		return nil, false, err
	}
	start = withMarkerAbove(data, exprs, start)
	out := slices.Concat(data[:start], data[end:])
	after, err := decode(path, out)
	if err != nil {
		return nil, false, &FileError{Path: path, Key: dottedKey(key), Err: fmt.Errorf("%w: removing handler %s makes the file invalid: %w", ErrConflict, name, err)}
	}
	if k, ok := supersetOf(cfg.tree, after, key); !ok {
		return nil, false, &FileError{Path: path, Key: k, Err: fmt.Errorf("%w: removing handler %s would change this setting", ErrConflict, name)}
	}
	return out, true, nil
}

// withMarkerAbove moves start back over the comment lines that end right
// where it begins (not shimkit's markers) and one blank line before them.
func withMarkerAbove(data []byte, exprs []expr, start int) int {
	i := slices.IndexFunc(exprs, func(e expr) bool { return e.start == start })
	for k := i - 1; k >= 0; k-- {
		e := exprs[k]
		if e.kind != unstable.Comment || e.end != start || strings.HasPrefix(e.text, markerBegin) || strings.HasPrefix(e.text, markerEnd) {
			break
		}
		start = e.start
	}
	if isBlankLineBefore(data, start) {
		start = trimOneNewline(data, start)
	}
	return start
}

// Evict removes a handler another installer wrote from the file that
// defines it (see EvictHandler), as one Change with a journal, so that a
// migration's Install of the same handler that follows, in the same
// operation, is undone together with it.
type Evict struct {
	Target Target
	Name   string
	// Match recognises the other installer's handler table.
	Match func(table map[string]any) bool
	// Files are further node paths to look in, after the file shimkit edits
	// for the handler and the root config (another installer may have used
	// a file of its own).
	Files []string
}

var _ Mutator = (*Evict)(nil)

// Apply evicts the handler from the first file that defines it outside
// shimkit's blocks; nothing changes when none does.
func (e *Evict) Apply(ctx context.Context) (*Change, error) {
	for _, w := range e.where() {
		if w.s.file != "" {
			if _, ok, err := readOptional(w.t.LocalPath(w.s.file)); err != nil || !ok {
				if err != nil {
					return nil, err
				}
				continue
			}
		}
		c, err := w.t.apply(ctx, w.s, func(p plan, data []byte) ([]byte, bool, error) {
			return evictHandler(p.nodePath, data, e.Name, e.Match, p.opts.version)
		})
		if err != nil || c.Changed() {
			return c, err
		}
	}
	return &Change{}, nil
}

// FilesToEdit lists the node paths Apply may edit, for crash recovery.
func (e *Evict) FilesToEdit() ([]string, error) {
	var out []string
	for _, w := range e.where() {
		p, err := w.t.planFor(w.s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p.nodePath) {
			out = append(out, p.nodePath)
		}
	}
	return out, nil
}

type evictIn struct {
	t Target
	s subject
}

// where are the files to look in: the one shimkit edits for the handler,
// the root config (or template), then e.Files.
func (e *Evict) where() []evictIn {
	root := e.Target
	root.Mode = ModeFile
	out := []evictIn{{e.Target, handlerSubject(e.Name)}, {root, handlerSubject(e.Name)}}
	for _, f := range e.Files {
		out = append(out, evictIn{root, subject{file: f}})
	}
	return out
}
