package containerdconfig

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// AddHandler returns data with the runtime handler registered in the CRI
// plugin of the file's schema version. changed is false when the file
// already has the handler with identical settings; then out is data itself
// and containerd needs no restart.
//
// The handler goes in a managed block at the end of the file; a handler
// shimkit added before is updated in place. A handler the user wrote with
// different settings is replaced, in place, by a managed block. Everything
// else stays byte for byte. The result is parsed again and must hold every
// setting of the original (outside the handler) with the same value.
//
// On containerd 1.x schemas (versions 1 and 2), defining any runtime drops
// the built-in runc runtime, so when the file does not define the default
// runtime runc, a managed block that keeps it is added too.
func AddHandler(path string, data []byte, h RuntimeHandler) (out []byte, changed bool, err error) {
	return addHandler(path, data, h, addOptions{})
}

// addOptions adapt AddHandler to files that are not a whole config: a
// template or drop-in, whose schema version and runtimes come from elsewhere.
type addOptions struct {
	version int  // schema version, when the file does not say
	hasRunc bool // the effective config already defines runc
}

func addHandler(path string, data []byte, h RuntimeHandler, opts addOptions) (out []byte, changed bool, err error) {
	cfg, err := parse(path, data, opts.version)
	if err != nil {
		return nil, false, err
	}
	if err := h.Validate(); err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	s := detectStyle(data)
	runtimes := cfg.runtimesPath()
	body, err := s.renderHandler(runtimes, h)
	if err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	want, err := desiredHandler(body, runtimes, h.Name)
	if err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	if reflect.DeepEqual(cfg.Handler(h.Name), want) {
		return data, false, nil
	}

	exprs := scan(data)
	blocks, err := findBlocks(path, data, exprs)
	if err != nil {
		return nil, false, err
	}
	handlerKey := append(slices.Clone(runtimes), h.Name)
	switch b, ok := blockByID(blocks, handlerID(h.Name)); {
	case ok:
		out = slices.Concat(data[:b.bodyStart], body, data[b.bodyEnd:])
	case cfg.HasHandler(h.Name):
		out, err = adopt(path, data, exprs, handlerKey, s, h.Name, body)
		if err != nil {
			return nil, false, err
		}
	default:
		out = data
		if !opts.hasRunc && cfg.Version <= 2 && cfg.DefaultRuntime == "runc" && h.Name != "runc" && !cfg.HasHandler("runc") {
			if _, ok := blockByID(blocks, keeperID("runc")); !ok {
				keeper, err := s.renderRuncKeeper(runtimes)
				if err != nil {
					return nil, false, &FileError{Path: path, Err: err}
				}
				out = appendBlock(out, s, keeperID("runc"), keeper)
			}
		}
		out = appendBlock(out, s, handlerID(h.Name), body)
	}
	if err := verifyAdd(path, "handler", cfg, out, handlerKey, want); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// RemoveHandler returns data without the managed block of the runtime
// handler, and without the block that keeps runc when no other shimkit
// handler needs it. After AddHandler on a file without that handler,
// RemoveHandler gives back the original bytes. changed is false when the file
// has no shimkit block for the handler: a handler the user wrote is never
// removed.
func RemoveHandler(path string, data []byte, name string) (out []byte, changed bool, err error) {
	if _, err := decode(path, data); err != nil {
		return nil, false, err
	}
	blocks, err := findBlocks(path, data, scan(data))
	if err != nil {
		return nil, false, err
	}
	b, ok := blockByID(blocks, handlerID(name))
	if !ok {
		return data, false, nil
	}
	out = cutBlock(data, b)
	others := slices.ContainsFunc(blocks, func(o block) bool { return o.id != b.id && strings.HasPrefix(o.id, idHandler) })
	if !others {
		rest, err := findBlocks(path, out, scan(out))
		if err != nil {
			return nil, false, err
		}
		if k, ok := blockByID(rest, keeperID("runc")); ok {
			out = cutBlock(out, k)
		}
	}
	if _, err := decode(path, out); err != nil {
		return nil, false, fmt.Errorf("removing handler %s would break the file: %w", name, err)
	}
	return out, true, nil
}

// desiredHandler decodes the rendered handler tables, so that it compares
// with what Parse reads (int64, []any, ...).
func desiredHandler(body []byte, runtimes []string, name string) (map[string]any, error) {
	tree, err := decode("", body)
	if err != nil {
		return nil, err
	}
	m, _ := lookup(tree, append(slices.Clone(runtimes), name)).(map[string]any)
	return m, nil
}

// adopt replaces the tables of a handler the user defined by a managed
// block at the place of the first of them.
func adopt(path string, data []byte, exprs []expr, key []string, s style, name string, body []byte) ([]byte, error) {
	type span struct{ start, end int }
	var spans []span
	for i, e := range exprs {
		if e.kind == unstable.KeyValue && !hasPrefix(e.table, key) && (hasPrefix(e.key, key) || hasPrefix(key, e.key)) {
			// A dotted key or inline table outside the handler's own tables.
			return nil, &FileError{Path: path, Line: e.line, Column: 1, Key: dottedKey(e.key),
				Err: fmt.Errorf("%w: handler %s is defined inline here; shimkit edits only [table] definitions", ErrConflict, name)}
		}
		if e.kind != unstable.Table && e.kind != unstable.ArrayTable || !hasPrefix(e.key, key) {
			continue
		}
		end := len(data)
		for j := i + 1; j < len(exprs); j++ {
			if exprs[j].kind == unstable.Table || exprs[j].kind == unstable.ArrayTable {
				end = exprs[j].start
				// Comments right above the next header belong to it.
				for k := j - 1; k > i && exprs[k].kind == unstable.Comment && exprs[k].end == end; k-- {
					end = exprs[k].start
				}
				break
			}
		}
		// Blank lines before the next table stay too.
		for end > e.start && isBlankLineBefore(data, end) {
			end = trimOneNewline(data, end)
		}
		if n := len(spans); n > 0 && len(bytes.TrimSpace(data[spans[n-1].end:e.start])) == 0 {
			spans[n-1].end = end // only blank lines between: one span
			continue
		}
		spans = append(spans, span{e.start, end})
	}
	if len(spans) == 0 {
		return nil, &FileError{Path: path, Key: dottedKey(key),
			Err: fmt.Errorf("%w: handler %s is defined in a form shimkit cannot edit", ErrConflict, name)}
	}
	var out []byte
	last := 0
	for i, sp := range spans {
		out = append(out, data[last:sp.start]...)
		if i == 0 {
			out = append(out, markerBegin+handlerID(name)+markerManaged+" >>>"+s.nl...)
			out = append(out, body...)
			out = append(out, markerEnd+handlerID(name)+" <<<"+s.nl...)
		}
		last = sp.end
	}
	return append(out, data[last:]...), nil
}

// verifyAdd parses the result and checks that it has the table at key (of
// a handler or a proxy plugin: what) as wanted and every other setting of
// the original.
func verifyAdd(path, what string, before *Config, out []byte, key []string, want map[string]any) error {
	after, err := decode(path, out)
	if err != nil {
		return &FileError{Path: path, Key: dottedKey(key),
			Err: fmt.Errorf("%w: adding the %s makes the file invalid: %w", ErrConflict, what, err)}
	}
	if got, _ := lookup(after, key).(map[string]any); !reflect.DeepEqual(got, want) {
		return &FileError{Path: path, Key: dottedKey(key),
			Err: fmt.Errorf("%w: the %s table is merged with settings shimkit did not write", ErrConflict, what)}
	}
	if k, ok := supersetOf(before.tree, after, key); !ok {
		return &FileError{Path: path, Key: k, Err: fmt.Errorf("%w: the edit would change this setting", ErrConflict)}
	}
	return nil
}
