package containerdconfig

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pelletier/go-toml/v2"
)

// Sentinel errors, checked with errors.Is. Every error this package returns
// for bad input wraps one of them in a *FileError that names the file, line
// and key.
var (
	// ErrParse: the file is not valid TOML.
	ErrParse = errors.New("config is not valid TOML")
	// ErrVersion: the schema version is not one containerd knows (1–4).
	ErrVersion = errors.New("unsupported config version")
	// ErrInvalidHandler: the RuntimeHandler fails validation.
	ErrInvalidHandler = errors.New("invalid runtime handler")
	// ErrConflict: the edit would collide with configuration shimkit does
	// not own (an inline definition, a table the distribution generates).
	ErrConflict = errors.New("edit would collide with existing configuration")
	// ErrTemplate: a distribution template shimkit cannot edit safely.
	ErrTemplate = errors.New("template not understood")
)

// FileError locates a problem in a config file.
type FileError struct {
	Path   string
	Line   int // 1-based; 0 when unknown
	Column int
	Key    string // dotted key, when known
	Err    error
}

func (e *FileError) Error() string {
	loc := e.Path
	if loc == "" {
		loc = "<config>"
	}
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", loc, e.Line, e.Column)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: key %s: %v", loc, e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %v", loc, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Plugin ids of the CRI runtime configuration per schema version.
const (
	criV1ShortID = "cri"                          // version 1 files use short ids
	criV2ID      = "io.containerd.grpc.v1.cri"    // containerd 1.x, version 2
	criV3ID      = "io.containerd.cri.v1.runtime" // containerd 2.x, versions 3 and 4
)

// Config is what shimkit reads from a containerd config file.
type Config struct {
	// Version is the schema version: 1 when the file has no version key.
	// 1 and 2 are the containerd 1.x layout, 3 and 4 containerd 2.x.
	Version int
	// Imports lists the files and globs the config imports, as written.
	Imports []string
	// Handlers lists the runtime handlers defined in the CRI plugin, sorted.
	Handlers []string
	// DefaultRuntime is default_runtime_name, or "runc" when unset.
	DefaultRuntime string

	path string
	tree map[string]any
}

// Parse reads a containerd config. path is used only in errors.
func Parse(path string, data []byte) (*Config, error) { return parse(path, data, 0) }

// parse reads a config; a non-zero version overrides the file's (for a
// template, whose version is the rendered config's).
func parse(path string, data []byte, version int) (*Config, error) {
	tree := map[string]any{}
	if err := toml.Unmarshal(data, &tree); err != nil {
		return nil, parseError(path, err)
	}
	c := &Config{Version: 1, DefaultRuntime: "runc", path: path, tree: tree}
	if v, ok := tree["version"]; ok {
		n, ok := v.(int64)
		if !ok || n < 1 || n > 4 {
			return nil, &FileError{Path: path, Line: lineOfKey(data, "version"), Column: 1, Key: "version",
				Err: fmt.Errorf("%w: %v (containerd knows 1 to 4)", ErrVersion, v)}
		}
		c.Version = int(n)
	}
	if version != 0 {
		c.Version = version
	}
	if imp, ok := tree["imports"].([]any); ok {
		for _, i := range imp {
			if s, ok := i.(string); ok {
				c.Imports = append(c.Imports, s)
			}
		}
	}
	if rt, ok := lookup(tree, c.runtimesPath()).(map[string]any); ok {
		for name := range rt {
			c.Handlers = append(c.Handlers, name)
		}
		slices.Sort(c.Handlers)
	}
	if d, ok := lookup(tree, c.containerdPath("default_runtime_name")).(string); ok && d != "" {
		c.DefaultRuntime = d
	}
	return c, nil
}

// CRIPluginID returns the id under [plugins] that holds runtime handlers.
func (c *Config) CRIPluginID() string { return criPluginID(c.Version) }

// HasHandler reports whether the CRI plugin defines a runtime handler.
func (c *Config) HasHandler(name string) bool {
	_, ok := slices.BinarySearch(c.Handlers, name)
	return ok
}

// Handler returns the decoded table of a runtime handler, or nil.
func (c *Config) Handler(name string) map[string]any {
	m, _ := lookup(c.tree, append(c.runtimesPath(), name)).(map[string]any)
	return m
}

func criPluginID(version int) string {
	switch version {
	case 1:
		return criV1ShortID
	case 2:
		return criV2ID
	default:
		return criV3ID
	}
}

func (c *Config) containerdPath(keys ...string) []string {
	return append([]string{"plugins", c.CRIPluginID(), "containerd"}, keys...)
}

func (c *Config) runtimesPath() []string { return c.containerdPath("runtimes") }

func lookup(tree map[string]any, path []string) any {
	var cur any = tree
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func parseError(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		key := ""
		if k := de.Key(); len(k) > 0 {
			key = dottedKey(k)
		}
		return &FileError{Path: path, Line: line, Column: col, Key: key, Err: fmt.Errorf("%w: %s", ErrParse, de.Error())}
	}
	return &FileError{Path: path, Err: fmt.Errorf("%w: %w", ErrParse, err)}
}
