package crioconfig

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pelletier/go-toml/v2"
)

// Source is one file CRI-O reads and the runtime handlers it defines.
type Source struct {
	Path     string   // on the node
	Handlers []string // [crio.runtime.runtimes.NAME] tables, sorted
	// DefaultRuntime is crio.runtime.default_runtime when the file sets it.
	DefaultRuntime string
	// CgroupManager is crio.runtime.cgroup_manager when the file sets it.
	CgroupManager string
	data          []byte
}

// Snapshot is what CRI-O would read on start, in its order: the config
// file (when it exists), then every file under the drop-in directory,
// recursively, whatever its name, in lexical order (CRI-O v1.34:
// criocli mergeConfig calls UpdateFromFile, then UpdateFromPath, which
// is a filepath.Walk that decodes every non-directory). A later file's
// handler of a name replaces an earlier one's whole table (BurntSushi's
// decoder makes a new map value per key).
type Snapshot struct {
	Sources []Source
}

// Scan reads every file CRI-O would read. A file that is not TOML, or
// whose runtime tables are not tables, is an error wrapping ErrParse that
// names it: CRI-O would not start with it.
func Scan(t Target) (*Snapshot, error) {
	s := &Snapshot{}
	data, ok, err := readOptional(t.local(t.config()))
	if err != nil {
		return nil, err
	}
	if ok {
		src, err := parseSource(t.config(), data)
		if err != nil {
			return nil, err
		}
		s.Sources = append(s.Sources, src)
	}
	root := t.local(t.dropInDir())
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		node := filepath.Join(t.dropInDir(), rel)
		data, err := os.ReadFile(p)
		if err != nil { // a symlink to a directory, an unreadable file: CRI-O stops too
			return fileErr(node, ErrParse, "CRI-O reads every file here and cannot read this one: %v", err)
		}
		src, err := parseSource(node, data)
		if err != nil {
			return err
		}
		s.Sources = append(s.Sources, src)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// parseSource decodes one file and lists its handlers.
func parseSource(path string, data []byte) (Source, error) {
	var doc struct {
		Crio struct {
			Runtime struct {
				DefaultRuntime string         `toml:"default_runtime"`
				CgroupManager  string         `toml:"cgroup_manager"`
				Runtimes       map[string]any `toml:"runtimes"`
			} `toml:"runtime"`
		} `toml:"crio"`
	}
	if err := toml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return Source{}, fileErr(path, ErrParse, "%v", err)
	}
	src := Source{Path: path, DefaultRuntime: doc.Crio.Runtime.DefaultRuntime, CgroupManager: doc.Crio.Runtime.CgroupManager, data: data}
	for name, v := range doc.Crio.Runtime.Runtimes {
		if _, ok := v.(map[string]any); !ok {
			return Source{}, fileErr(path, ErrParse, "crio.runtime.runtimes.%s is a %T, not a table", name, v)
		}
		src.Handlers = append(src.Handlers, name)
	}
	slices.Sort(src.Handlers)
	return src, nil
}

// DefiningFiles returns the files that define the handler, in the order
// CRI-O reads them; the last one wins.
func (s *Snapshot) DefiningFiles(handler string) []string {
	var out []string
	for _, src := range s.Sources {
		if slices.Contains(src.Handlers, handler) {
			out = append(out, src.Path)
		}
	}
	return out
}

// builtinRuntime is the handler CRI-O v1.34's DefaultConfig defines
// before it reads any file (pkg/config DefaultRuntime): a file's handler
// of that name replaces it.
const builtinRuntime = "crun"

// DefaultRuntime returns the default runtime CRI-O would use: the last
// default_runtime set, or crun (CRI-O v1.34's DefaultRuntime).
func (s *Snapshot) DefaultRuntime() string {
	def := builtinRuntime
	for _, src := range s.Sources {
		if src.DefaultRuntime != "" {
			def = src.DefaultRuntime
		}
	}
	return def
}

// Files returns the paths CRI-O would read, in its order.
func (s *Snapshot) Files() []string {
	out := make([]string, len(s.Sources))
	for i, src := range s.Sources {
		out[i] = src.Path
	}
	return out
}
