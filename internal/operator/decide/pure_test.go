package decide

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPure: the package imports no client, network or OS access and calls
// no clock (a decision's time is the Snapshot's Now).
func TestPure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "net", "net/http", "os", "os/exec", "context"}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "NewTimer": true, "Tick": true}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, b := range banned {
				if path == b || strings.HasPrefix(path, b+"/") && b != "net" && b != "os" {
					t.Errorf("%s imports %s: a decision reads only its Snapshot", f, path)
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == "time" && clock[sel.Sel.Name] {
				t.Errorf("%s calls time.%s: a decision's time is Snapshot.Now", f, sel.Sel.Name)
			}
			return true
		})
	}
}
