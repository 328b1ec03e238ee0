package containerdconfig

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// AddHandler returns data with the runtime handler registered in the CRI
// plugin of the file's schema version. changed is false when the file
// already has shimkit's block for the handler with identical settings; then
// out is data itself and containerd needs no restart.
//
// The handler goes in a managed block at the end of the file; a handler
// shimkit added (or adopted) before is updated in place. A handler the file
// defines outside a shimkit block (the user's, another tool's) is never
// taken over, whether its settings are the ones asked for or not: the error
// is a *FileError wrapping ErrConflict that names the file, line and key.
// AdoptHandler takes such a handler over when that is asked for. Everything
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
	version  int  // schema version, when the file does not say
	hasRunc  bool // the effective config already defines runc
	adopt    bool // take over a handler the file defines (AdoptHandler)
	template bool // the file is a k3s/RKE2 Go template (masked)
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
	s.template = opts.template
	runtimes := cfg.runtimesPath()
	body, err := s.renderHandler(runtimes, h)
	if err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	want, err := desiredHandler(body, runtimes, h.Name)
	if err != nil {
		return nil, false, &FileError{Path: path, Err: err}
	}
	exprs := scan(data)
	blocks, err := findBlocks(path, data, exprs)
	if err != nil {
		return nil, false, err
	}
	handlerKey := append(slices.Clone(runtimes), h.Name)
	adopted := false
	switch b, ours := blockByID(blocks, handlerID(h.Name)); {
	case ours:
		if reflect.DeepEqual(cfg.Handler(h.Name), want) {
			return data, false, nil
		}
		out = slices.Concat(data[:b.keptEnd], body, data[b.bodyEnd:])
	case cfg.HasHandler(h.Name) && !opts.adopt:
		return nil, false, foreignHandler(path, exprs, blocks, handlerKey, h.Name)
	case cfg.HasHandler(h.Name):
		out, err = adopt(path, data, exprs, blocks, handlerKey, s, h.Name, body)
		if err != nil {
			return nil, false, err
		}
		adopted = true
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
	if adopted {
		if err := verifyRestorable(path, data, out, h.Name); err != nil {
			return nil, false, err
		}
	}
	return out, true, nil
}

// RemoveHandler returns data without the managed block of the runtime
// handler, and without the block that keeps runc when no other shimkit
// handler needs it. After AddHandler on a file without that handler,
// RemoveHandler gives back the original bytes; a handler shimkit adopted
// (AdoptHandler) gets the text it had before, byte for byte. changed is false
// when the file has no shimkit block for the handler: a handler the user
// wrote is never removed.
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
	if b.adopted {
		out = restoreAdopted(data, b)
	} else {
		out = cutBlock(data, b)
	}
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
