package containerdconfig

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
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
	// Adopt lets Apply take over a handler of that name that the edited
	// file defines outside a shimkit block, keeping its original text so
	// that Uninstall puts it back (see AdoptHandler). Without it such a
	// handler is an ErrConflict and nothing is written.
	Adopt bool
}

// NewInstall returns a Mutator that registers h on the target.
func NewInstall(t Target, h RuntimeHandler) *Install { return &Install{Target: t, Handler: h} }

// Apply registers the handler. A handler of that name that the edited file
// defines outside a shimkit block is an ErrConflict unless Adopt is set.
// Bad input (a file that does not parse, an invalid handler, a template
// shimkit does not understand, a collision) returns an error naming the
// file, line and key, and no file is touched.
func (i *Install) Apply(ctx context.Context) (*Change, error) {
	if err := i.Handler.Validate(); err != nil {
		return nil, err
	}
	return i.Target.apply(ctx, handlerSubject(i.Handler.Name), func(p plan, data []byte) ([]byte, bool, error) {
		if err := i.Target.handlerElsewhere(p, data, i.Handler.Name); err != nil {
			return nil, false, err
		}
		if p.rendered != nil && p.rendered.HasHandler(i.Handler.Name) {
			own, err := parse(p.nodePath, data, p.opts.version)
			if err != nil {
				return nil, false, err
			}
			if !own.HasHandler(i.Handler.Name) { // not in the template: the distribution's
				generated, err := checkGenerated(p, data, i.Handler)
				if err != nil || generated {
					return data, false, err // the distribution renders it as wanted: nothing to do
				}
			}
		}
		opts := p.opts
		opts.adopt = i.Adopt
		return addHandler(p.nodePath, data, i.Handler, opts)
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
//
// On k3s and RKE2 it works even when the rendered config does not parse
// (k3s rendered a runtime table twice): it removes shimkit's block from
// its drop-in or the template, which is what lets k3s render a config
// containerd accepts again.
func (u *Uninstall) Apply(ctx context.Context) (*Change, error) {
	s := handlerSubject(u.Name)
	s.removal = true
	return u.Target.apply(ctx, s, func(p plan, data []byte) ([]byte, bool, error) {
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
	fc := fileChange{nodePath: p.nodePath, local: p.local, template: p.template, before: before, existed: existed, after: out}
	if !existed {
		fc.seed = p.seed
	}
	if p.seed != nil && bytes.Equal(out, p.seed) {
		fc.after, fc.removed = nil, true // only the seed is left: the file was shimkit's
	}
	if existed && !fc.removed && bytes.Equal(before, fc.after) {
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

// mergedWith lists the files containerd merges with the one the edit goes
// to: the root config when the edit goes to a drop-in or template, and the
// other files the drop-in's import pattern matches.
func (t Target) mergedWith(p plan) ([]string, error) {
	var others []string
	if t.Preset.Config != p.nodePath {
		others = append(others, t.Preset.Config)
	}
	if p.imports != "" {
		entries, err := os.ReadDir(t.LocalPath(path.Dir(p.imports)))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range entries {
			np := path.Join(path.Dir(p.imports), e.Name())
			if ok, _ := filepath.Match(path.Base(p.imports), e.Name()); ok && !e.IsDir() && np != p.nodePath && !slices.Contains(others, np) {
				others = append(others, np)
			}
		}
	}
	return others, nil
}

// handlerElsewhere refuses a new drop-in block for a handler that a file
// containerd merges with the drop-in (the root config, another drop-in)
// defines outside a shimkit block for it: containerd would merge the two
// definitions, silently taking the other one over. Adoption keeps the
// original text in the file it edits, so it cannot help here either.
func (t Target) handlerElsewhere(p plan, data []byte, name string) error {
	if p.imports == "" {
		return nil
	}
	if _, err := decode(p.nodePath, data); err != nil {
		return err
	}
	blocks, err := findBlocks(p.nodePath, data, scan(data))
	if err != nil {
		return err
	}
	if _, ours := blockByID(blocks, handlerID(name)); ours {
		return nil // installed before: updated in place
	}
	others, err := t.mergedWith(p)
	if err != nil {
		return err
	}
	for _, np := range others {
		data, ok, err := readOptional(t.LocalPath(np))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		cfg, err := Parse(np, data)
		if err != nil {
			return err
		}
		if !cfg.HasHandler(name) {
			continue
		}
		exprs := scan(data)
		blocks, err := findBlocks(np, data, exprs)
		if err != nil {
			return err
		}
		if _, ours := blockByID(blocks, handlerID(name)); ours {
			continue
		}
		fe := foreignHandler(np, exprs, blocks, append(cfg.runtimesPath(), name), name)
		fe.Err = fmt.Errorf("%w: handler %s is defined here and was not written by shimkit; the drop-in %s would be merged with it and take it over; shimkit adopts a handler only in the file it edits (with Mode ModeFile, the root config)",
			ErrConflict, name, path.Base(p.nodePath))
		return fe
	}
	return nil
}
