// Package plancheck checks that the operator decides nothing once it acts:
// from the executors of a reconcile's plan (Reconciler.carryOut and
// Reconciler.carryOutRemoval), no function of the deciding core
// (CorePackages) is reachable, through any static call or function
// value of the operator's own packages, but for the few that Allowed
// names with the reason each only reads or renders what the plan holds.
//
// Load type-checks the operator's packages from source, their other
// dependencies from the compiler's export data (go list -export), and
// Reachable follows every function an executor refers to. WalkContext
// (on LoadModule's program: every module package from source) measures
// how far a reconcile's context travels: the walk a newcomer follows.
package plancheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Module is the module's import path.
const Module = "github.com/shimkit/shimkit"

// Own reports whether a package is checked from source: the operator's
// root and its internal packages.
func Own(path string) bool {
	return path == Module+"/operator" || strings.HasPrefix(path, Module+"/internal/operator/")
}

// Program is the operator's packages, type-checked, with every function
// declared in them by its object.
type Program struct {
	Fset  *token.FileSet
	Info  *types.Info
	Decls map[*types.Func]*ast.FuncDecl
	Pkgs  map[string]*types.Package
}

type listed struct {
	ImportPath, Dir, Export string
	GoFiles                 []string
	Standard                bool
}

// Load type-checks pattern's own packages (Own) in dependency order.
func Load(dir, pattern string) (*Program, error) { return load(dir, pattern, Own) }

// LoadModule type-checks every package of the module pattern depends on
// from source (Walk follows calls into all of them).
func LoadModule(dir, pattern string) (*Program, error) {
	return load(dir, pattern, func(path string) bool { return path == Module || strings.HasPrefix(path, Module+"/") })
}

func load(dir, pattern string, own func(string) bool) (*Program, error) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles,Standard", pattern)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export %s: %w", pattern, err)
	}
	var all []listed
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		all = append(all, p)
		exports[p.ImportPath] = p.Export
	}
	prog := &Program{Fset: token.NewFileSet(), Decls: map[*types.Func]*ast.FuncDecl{}, Pkgs: map[string]*types.Package{},
		Info: &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}}
	gc := importer.ForCompiler(prog.Fset, "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	imp := importerFunc(func(path string) (*types.Package, error) {
		if p, ok := prog.Pkgs[path]; ok {
			return p, nil
		}
		return gc.Import(path)
	})
	for _, p := range all {
		if own(p.ImportPath) {
			if err := prog.check(p, imp); err != nil {
				return nil, err
			}
		}
	}
	return prog, nil
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// check parses and type-checks one package, indexing its functions.
func (prog *Program) check(p listed, imp types.Importer) error {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(prog.Fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(p.ImportPath, prog.Fset, files, prog.Info)
	if err != nil {
		return fmt.Errorf("type-check %s: %w", p.ImportPath, err)
	}
	prog.Pkgs[p.ImportPath] = pkg
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := prog.Info.Defs[fd.Name].(*types.Func); ok {
					prog.Decls[fn] = fd
				}
			}
		}
	}
	return nil
}

// Method returns the method name of the named type in package path.
func (prog *Program) Method(path, typeName, name string) (*types.Func, error) {
	pkg := prog.Pkgs[path]
	if pkg == nil {
		return nil, fmt.Errorf("package %s not loaded", path)
	}
	tn, ok := pkg.Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		return nil, fmt.Errorf("no type %s in %s", typeName, path)
	}
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(tn.Type()), true, pkg, name)
	fn, ok := obj.(*types.Func)
	if !ok {
		return nil, fmt.Errorf("no method %s of %s", name, typeName)
	}
	return fn, nil
}

// Ref is a function an executor reaches: the function and the path of
// functions it was reached by.
type Ref struct {
	Func *types.Func
	Via  []string
}

// Reachable follows every function the roots refer to (calls and
// function values, closures included) through the functions declared in
// the own packages, and returns those of a package core names that it
// reaches (not followed further), each once, with the path it was first
// reached by. An interface method is not followed (its implementations
// are not known statically).
func (prog *Program) Reachable(core func(path string) bool, roots ...*types.Func) []Ref {
	var out []Ref
	prog.walk(core, roots, func(r Ref, _ *ast.FuncDecl) {
		if core(r.Func.Pkg().Path()) {
			out = append(out, r)
		}
	})
	return out
}

// Declared returns the functions declared in the own packages outside
// core that Reachable walks through from the roots, each with its
// declaration: what the executor itself runs.
func (prog *Program) Declared(core func(path string) bool, roots ...*types.Func) map[*ast.FuncDecl]Ref {
	out := map[*ast.FuncDecl]Ref{}
	prog.walk(core, roots, func(r Ref, fd *ast.FuncDecl) {
		if fd != nil && !core(r.Func.Pkg().Path()) {
			out[fd] = r
		}
	})
	return out
}

// walk visits each function reachable from the roots once (fd: its
// declaration, nil when it is not an own package's), following the
// functions of own packages outside core.
func (prog *Program) walk(core func(path string) bool, roots []*types.Func, visit func(Ref, *ast.FuncDecl)) {
	seen := map[*types.Func]bool{}
	queue := make([]Ref, 0, len(roots))
	for _, r := range roots {
		queue = append(queue, Ref{r, []string{r.FullName()}})
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if seen[it.Func] {
			continue
		}
		seen[it.Func] = true
		fd := prog.Decls[it.Func.Origin()]
		visit(it, fd)
		if fd == nil || core(it.Func.Pkg().Path()) {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			fn, ok := prog.Info.Uses[id].(*types.Func)
			if !ok || fn.Pkg() == nil || isInterfaceMethod(fn) {
				return true
			}
			queue = append(queue, Ref{fn.Origin(), append(append([]string(nil), it.Via...), fn.FullName())})
			return true
		})
	}
}

func isInterfaceMethod(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	return types.IsInterface(sig.Recv().Type())
}
