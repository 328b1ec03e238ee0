package containerdconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
)

// Mode chooses between editing the config file and writing a drop-in.
type Mode int

const (
	// ModeAuto writes a drop-in when the config imports a directory a
	// drop-in can go to and containerd merges drop-ins deeply (schema 3 and
	// up, or a distribution that merges them itself); otherwise it edits the
	// config file.
	ModeAuto Mode = iota
	// ModeFile always edits the config file (or template).
	ModeFile
	// ModeDropIn always writes a drop-in, and fails when there is nowhere
	// to write one.
	ModeDropIn
)

// ErrNoDropIn: ModeDropIn was asked for but the config imports no
// directory a drop-in can go to.
var ErrNoDropIn = errors.New("config imports no drop-in directory")

// Target is a node's containerd configuration: its root filesystem and the
// distribution's layout.
type Target struct {
	// Root is where the node's root filesystem is: "/" on the node itself,
	// the host mount in a privileged pod, or an image's root filesystem.
	Root   string
	Preset Preset
	Mode   Mode
}

// plan is where an edit for one handler goes.
type plan struct {
	nodePath string // the file on the node, for messages
	local    string // the file on this machine
	seed     []byte // content assumed when the file does not exist; nil: it must exist
	template bool   // a k3s/RKE2 Go template
	opts     addOptions
	rendered *Config // the config k3s/RKE2 render, to respect what they generate
	// imports is the import pattern (a node path) that loads the drop-in,
	// when the edit goes to one; other files it matches are merged too.
	imports string
}

// subject is what an edit registers, a runtime handler or a proxy plugin:
// it names the drop-in the edit goes to and the seed of a drop-in shimkit
// creates.
type subject struct {
	dropIn string                   // base name of the drop-in
	seed   func(version int) []byte // content of a new drop-in
	// file, when set, is the one file to edit (it must exist), whatever the
	// preset says: a file another installer wrote to.
	file string
	// removal: the edit only removes what shimkit wrote, so on k3s and
	// RKE2 it may go to shimkit's drop-in or the template even when the
	// rendered config does not parse (a config k3s rendered from a
	// template and its own runtime tables that containerd refuses): the
	// removal is what repairs it.
	removal bool
}

func handlerSubject(name string) subject {
	return subject{dropIn: dropInName(name), seed: func(v int) []byte { return dropInSeed(name, v) }}
}

// Seeds of files shimkit creates. Each carries a comment, so that a file a
// user wrote is never mistaken for one shimkit may delete.
func configSeed(version int) []byte {
	return []byte("# Created by shimkit for runtime handlers; deleted when the last one is removed.\nversion = " + strconv.Itoa(version) + "\n")
}

func dropInSeed(name string, version int) []byte {
	return []byte("# Runtime handler " + strconv.Quote(name) + " for containerd, written by shimkit.\nversion = " + strconv.Itoa(version) + "\n")
}

var templateSeed = []byte("# Created by shimkit: the distribution's config plus runtime handlers.\n" + baseTemplateSeed)

func dropInName(handler string) string { return "shimkit-" + handler + ".toml" }

// readOptional reads a file that may not exist.
func readOptional(p string) ([]byte, bool, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// planFor decides which file the edit for s goes to.
func (t Target) planFor(s subject) (plan, error) {
	if s.file != "" {
		return t.fixedFile(s.file)
	}
	p := t.Preset
	switch p.Name {
	case PresetK3s, PresetRKE2:
		return t.planRancher(s)
	case PresetK0s:
		version, err := t.rootVersion(2)
		if err != nil {
			return plan{}, err
		}
		return t.dropIn(path.Join(p.dropInDir, s.dropIn), path.Join(p.dropInDir, "*.toml"), s, version), nil
	}
	data, ok, err := readOptional(t.LocalPath(p.Config))
	if err != nil {
		return plan{}, err
	}
	if !ok {
		if p.Name != PresetContainerd || t.Mode == ModeDropIn {
			return plan{}, &FileError{Path: p.Config, Err: fs.ErrNotExist}
		}
		return plan{nodePath: p.Config, local: t.LocalPath(p.Config), seed: configSeed(2)}, nil
	}
	cfg, err := Parse(p.Config, data)
	if err != nil {
		return plan{}, err
	}
	if t.Mode != ModeFile && cfg.Version >= 3 {
		for _, imp := range cfg.Imports {
			if dir := importDir(p.Config, imp, s.dropIn); dir != "" {
				return t.dropIn(path.Join(dir, s.dropIn), path.Join(dir, path.Base(imp)), s, cfg.Version), nil
			}
		}
	}
	if t.Mode == ModeDropIn {
		return plan{}, &FileError{Path: p.Config, Key: "imports",
			Err: fmt.Errorf("%w (containerd 1.x replaces whole plugin sections from drop-ins, so shimkit writes drop-ins only for schema 3 and up)", ErrNoDropIn)}
	}
	pl := plan{nodePath: p.Config, local: t.LocalPath(p.Config)}
	if p.Name == PresetContainerd {
		pl.seed = configSeed(2) // a file shimkit created goes with its last handler
	}
	return pl, nil
}

// dropIn plans a drop-in whose version equals the root config's: a higher
// one makes containerd 2.3.0–2.3.4 refuse to start and 2.0–2.2 skip
// migrating the root.
func (t Target) dropIn(nodePath, imports string, s subject, version int) plan {
	return plan{nodePath: nodePath, local: t.LocalPath(nodePath), seed: s.seed(version), opts: addOptions{hasRunc: true}, imports: imports}
}

// planRancher plans an edit for k3s and RKE2, which render containerd's
// config on every start: a drop-in when the rendered config imports the
// drop-in directory, the template otherwise. The rendered file itself is
// never edited.
func (t Target) planRancher(s subject) (plan, error) {
	p := t.Preset
	data, ok, err := readOptional(t.LocalPath(p.Config))
	if err != nil {
		return plan{}, err
	}
	if !ok {
		return plan{}, &FileError{Path: p.Config, Err: fmt.Errorf("%w: %s renders this file on start; without it shimkit cannot tell which template (config.toml.tmpl or config-v3.toml.tmpl) is read", fs.ErrNotExist, p.Name)}
	}
	rendered, err := Parse(p.Config, data)
	if err != nil {
		if pl, ok := t.rancherRemoval(s); ok {
			return pl, nil
		}
		return plan{}, err
	}
	tmpl, dropDir := "config.toml.tmpl", "config.toml.d"
	if rendered.Version >= 3 {
		tmpl, dropDir = "config-v3.toml.tmpl", "config-v3.toml.d"
	}
	if t.Mode != ModeFile {
		want := path.Join(p.agentDir, dropDir)
		for _, imp := range rendered.Imports {
			if importDir(p.Config, imp, s.dropIn) == want {
				return t.dropIn(path.Join(want, s.dropIn), path.Join(want, path.Base(imp)), s, rendered.Version), nil
			}
		}
		if t.Mode == ModeDropIn {
			return plan{}, &FileError{Path: p.Config, Key: "imports", Err: fmt.Errorf("%w: %s is not imported", ErrNoDropIn, want)}
		}
	}
	nodePath := path.Join(p.agentDir, tmpl)
	return plan{
		nodePath: nodePath, local: t.LocalPath(nodePath), seed: templateSeed, template: true,
		opts:     addOptions{version: rendered.Version, hasRunc: true, template: true},
		rendered: rendered,
	}, nil
}

// rancherRemoval plans a removal on k3s and RKE2 without the rendered
// config (it does not parse): shimkit's drop-in in config-v3.toml.d when
// it is there, else the template k3s reads first (config-v3.toml.tmpl,
// then config.toml.tmpl) when there is one.
func (t Target) rancherRemoval(s subject) (plan, bool) {
	if !s.removal {
		return plan{}, false
	}
	dir := t.Preset.agentDir
	dropIn := path.Join(dir, "config-v3.toml.d", s.dropIn)
	if _, err := os.Lstat(t.LocalPath(dropIn)); err == nil {
		return t.dropIn(dropIn, path.Join(dir, "config-v3.toml.d", "*.toml"), s, 3), true
	}
	for _, tm := range []struct {
		name    string
		version int
	}{{"config-v3.toml.tmpl", 3}, {"config.toml.tmpl", 2}} {
		nodePath := path.Join(dir, tm.name)
		if _, err := os.Lstat(t.LocalPath(nodePath)); err == nil {
			return plan{nodePath: nodePath, local: t.LocalPath(nodePath), seed: templateSeed, template: true,
				opts: addOptions{version: tm.version, hasRunc: true, template: true}}, true
		}
	}
	return plan{}, false
}

// File returns the node path of the file an edit for handler goes to (the
// config, a template or a drop-in), so that a caller can record it before
// the edit for crash recovery (see Restore).
//
// On k3s and RKE2 whose rendered config does not parse, it names the file a
// removal would edit (see Uninstall); an install there still fails.
func (t Target) File(handler string) (string, error) {
	s := handlerSubject(handler)
	s.removal = true
	p, err := t.planFor(s)
	if err != nil {
		return "", err
	}
	return p.nodePath, nil
}

// LocalPath maps a node path to this machine, where the node's root
// filesystem is at Root.
func (t Target) LocalPath(nodePath string) string { return hostPath(t.Root, nodePath) }

// HasHandler reports whether the file the target edits for handler (the
// config, a template or a drop-in) defines it.
func (t Target) HasHandler(handler string) (bool, error) {
	p, err := t.planFor(handlerSubject(handler))
	if err != nil {
		return false, err
	}
	data, ok, err := readOptional(p.local)
	if err != nil || !ok {
		return false, err
	}
	if p.template {
		masked, err := maskTemplate(p.nodePath, data)
		if err != nil {
			return false, err
		}
		data = masked.data
	}
	cfg, err := parse(p.nodePath, data, p.opts.version)
	if err != nil {
		return false, err
	}
	return cfg.HasHandler(handler), nil
}

// fixedFile plans an edit of one given file, read with the schema version
// of the root config when it does not say its own.
func (t Target) fixedFile(nodePath string) (plan, error) {
	version, err := t.rootVersion(0)
	if err != nil {
		return plan{}, err
	}
	return plan{nodePath: nodePath, local: t.LocalPath(nodePath), opts: addOptions{version: version, hasRunc: true}}, nil
}

// RootConfig reads and parses the preset's root config (the rendered one
// on k3s and RKE2); ok is false when the file does not exist.
func (t Target) RootConfig() (cfg *Config, ok bool, err error) {
	data, ok, err := readOptional(t.LocalPath(t.Preset.Config))
	if err != nil || !ok {
		return nil, false, err
	}
	cfg, err = Parse(t.Preset.Config, data)
	return cfg, err == nil, err
}

// rootVersion is the root config's schema version, def when it is absent.
func (t Target) rootVersion(def int) (int, error) {
	cfg, ok, err := t.RootConfig()
	if err != nil || !ok {
		return def, err
	}
	return cfg.Version, nil
}
