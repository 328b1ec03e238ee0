// Command apilist writes the exported API of shimkit's public packages, one
// file per package under api/, as the Go project keeps its api/ files: the
// list a change to the public API shows up in, to be reviewed. A public
// package is one outside internal/, cmd/, e2e/, hack/ and examples/.
//
//	go run ./hack/apilist           # rewrite api/
//	go run ./hack/apilist -verify   # fail when api/ differs (make test)
//
// The list holds signatures, not comments: every exported constant (with
// its value: reason constants cross the process boundary), variable,
// function, type (a struct's exported fields, an interface's methods) and
// method. A type alias of an internal type lists that type's API too: it
// is promised all the same.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// module is the library's import path.
const module = "github.com/shimkit/shimkit"

// maxPackages is the most public packages the module promises (issue #45).
const maxPackages = 13

func main() {
	verify := flag.Bool("verify", false, "fail when the files under -out differ from the code")
	out := flag.String("out", "api", "the directory of the API files")
	flag.Parse()
	if err := run(".", *out, *verify); err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(1)
	}
}

// run lists the API of the module at root and writes it to dir, or
// compares it with dir.
func run(root, dir string, verify bool) error {
	pkgs, err := load(root)
	if err != nil {
		return err
	}
	if err := noDoubles(pkgs); err != nil {
		return err
	}
	if err := unnameable(pkgs); err != nil {
		return err
	}
	files := render(pkgs)
	if verify {
		return compare(dir, files)
	}
	return write(dir, files)
}

// listed is one package as go list describes it.
type listed struct {
	ImportPath, Name, Export string
	Standard                 bool
}

// noDoubles refuses an exported test double (Fake*, Mock*, Stub*) outside
// a package of doubles (one whose name ends in "test", as httptest).
func noDoubles(pkgs []*types.Package) error {
	var bad []string
	for _, p := range pkgs {
		if strings.HasSuffix(p.Name(), "test") {
			continue
		}
		for _, name := range p.Scope().Names() {
			for _, prefix := range []string{"Fake", "Mock", "Stub", "ErrFake"} {
				if strings.HasPrefix(name, prefix) && token.IsExported(name) {
					bad = append(bad, p.Path()+"."+name)
				}
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("test doubles in the public API (move them to a *test package): %s", strings.Join(bad, ", "))
	}
	return nil
}

// load lists the module's packages and their dependencies with export data
// (go list -export compiles what it must), and imports the public ones.
func load(dir string) ([]*types.Package, error) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Name,Export,Standard", "./...")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if isPublic(p.ImportPath) && p.Name != "main" {
			public = append(public, p.ImportPath)
		}
	}
	if len(public) > maxPackages {
		return nil, fmt.Errorf("%d public packages, at most %d: %s (move the others under internal/)", len(public), maxPackages, strings.Join(public, ", "))
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	sort.Strings(public)
	var out []*types.Package
	for _, path := range public {
		p, err := imp.Import(path)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// isPublic reports whether a package of the module is one users import.
func isPublic(path string) bool {
	if path != module && !strings.HasPrefix(path, module+"/") {
		return false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	for _, part := range strings.Split(rel, "/") {
		switch part {
		case "internal", "cmd", "e2e", "hack", "examples", "testdata":
			return false
		}
	}
	return true
}

// fileName is the API file of a package: its path in the module, slashes
// as dots ("shimkit" for the module's root).
func fileName(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	if rel == "" {
		rel = "shimkit"
	}
	return strings.ReplaceAll(rel, "/", ".") + ".txt"
}

// write replaces the API files under dir with files.
func write(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	for _, f := range old {
		if _, ok := files[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// compare fails, naming each file, when dir differs from files.
func compare(dir string, files map[string][]byte) error {
	var diffs []string
	old, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	for _, f := range old {
		if _, ok := files[filepath.Base(f)]; !ok {
			diffs = append(diffs, f+": no such public package")
		}
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		have, err := os.ReadFile(path)
		if err != nil {
			diffs = append(diffs, path+": missing")
			continue
		}
		if d := lineDiff(have, data); d != "" {
			diffs = append(diffs, path+":\n"+d)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	return fmt.Errorf("the public API changed; review it, then run make api and commit api/:\n%s", strings.Join(diffs, "\n"))
}

// lineDiff lists the lines only in have (-) and only in want (+).
func lineDiff(have, want []byte) string {
	in := func(data []byte) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(string(data), "\n") {
			m[l] = true
		}
		return m
	}
	h, w := in(have), in(want)
	var out []string
	for _, l := range strings.Split(string(have), "\n") {
		if !w[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(string(want), "\n") {
		if !h[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
