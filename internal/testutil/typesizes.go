package testutil

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// CheckTypeSizes fails t when a type of a package below root (its own
// files, tests left out) has more than max methods: declared, promoted
// from the package's own embedded types, and an embedded interface's of
// the package. A type past it holds more than one role. atLeast guards the
// walk: fewer types with methods than that found is an error.
func CheckTypeSizes(t testing.TB, root string, max, atLeast int) {
	t.Helper()
	pkgs := map[string]*pkgTypes{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		p := pkgs[filepath.Dir(path)]
		if p == nil {
			p = &pkgTypes{methods: map[string]int{}, embeds: map[string][]string{}}
			pkgs[filepath.Dir(path)] = p
		}
		p.add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for dir, p := range pkgs {
		for typ := range p.methods {
			checked++
			if n := p.count(typ, map[string]bool{}); n > max {
				t.Errorf("%s: type %s has %d methods, want at most %d: split it by role", dir, typ, n, max)
			}
		}
	}
	if checked < atLeast {
		t.Fatalf("only %d types with methods found below %s: is the walk broken?", checked, root)
	}
}

// pkgTypes are the method counts of one package's types, and what each
// struct embeds.
type pkgTypes struct {
	methods map[string]int
	embeds  map[string][]string
}

// add counts the methods and embedded fields of a file's declarations.
func (p *pkgTypes) add(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) == 1 {
				p.methods[typeName(d.Recv.List[0].Type)]++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					p.addType(ts)
				}
			}
		}
	}
}

func (p *pkgTypes) addType(ts *ast.TypeSpec) {
	switch t := ts.Type.(type) {
	case *ast.StructType:
		for _, field := range t.Fields.List {
			if len(field.Names) == 0 {
				p.embeds[ts.Name.Name] = append(p.embeds[ts.Name.Name], typeName(field.Type))
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				p.embeds[ts.Name.Name] = append(p.embeds[ts.Name.Name], typeName(m.Type))
			}
			p.methods[ts.Name.Name] += len(m.Names)
		}
	}
}

// count is typ's methods with those its embedded types promote.
func (p *pkgTypes) count(typ string, seen map[string]bool) int {
	if seen[typ] {
		return 0
	}
	seen[typ] = true
	n := p.methods[typ]
	for _, e := range p.embeds[typ] {
		n += p.count(e, seen)
	}
	return n
}

// typeName is the name of a receiver or embedded field's type (T, *T,
// T[P]).
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
