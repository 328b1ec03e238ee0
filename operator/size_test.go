package operator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most methods a type of the operator may have, its
// embedded types' included: a type past it holds more than one role.
const maxMethods = 15

// TestTypeSizes: no type in operator/... has more than maxMethods
// methods (declared, and promoted from the package's own embedded types).
func TestTypeSizes(t *testing.T) {
	type pkgTypes struct {
		methods map[string]int
		embeds  map[string][]string
	}
	pkgs := map[string]*pkgTypes{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
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
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					p.methods[typeName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						if len(field.Names) == 0 {
							p.embeds[ts.Name.Name] = append(p.embeds[ts.Name.Name], typeName(field.Type))
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for dir, p := range pkgs {
		for typ, n := range p.methods {
			for _, e := range p.embeds[typ] {
				n += p.methods[e]
			}
			checked++
			if n > maxMethods {
				t.Errorf("%s: type %s has %d methods, want at most %d: split it by role", dir, typ, n, maxMethods)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d types with methods found: is the walk broken?", checked)
	}
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
