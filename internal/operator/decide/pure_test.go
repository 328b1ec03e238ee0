package decide

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the import path prefix of shimkit's own packages.
const module = "github.com/shimkit/shimkit"

// TestPure: the decision core, and every package of shimkit it links,
// imports no client, network, OS access or context and calls no clock (a
// decision's time is the Snapshot's Now); nothing it links, however deep,
// is a Kubernetes client, a registry client or the signature stack. (The
// standard library's net/http and os come in through apimachinery's
// types; no code of ours uses them.)
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	// (oras-go's registry package parses references; its remote package
	// is the registry client.)
	linked := []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "oras.land/oras-go/v2/registry/remote", "github.com/sigstore/", "github.com/google/go-containerregistry"}
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, _ := strings.Cut(line, "\t")
		for _, b := range linked {
			if strings.HasPrefix(path, b) {
				t.Errorf("the decision core links %s", path)
			}
		}
		if path == module || strings.HasPrefix(path, module+"/") {
			ours = append(ours, path)
			checkPure(t, path, dir)
		}
	}
	if len(ours) < 5 {
		t.Fatalf("go list found only %v: the check checks nothing", ours)
	}
}

// checkPure fails for each banned import or clock call in the package's
// non-test files.
func checkPure(t *testing.T, pkg, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
					t.Errorf("%s: %s imports %s: a decision reads only its Snapshot", pkg, filepath.Base(f), path)
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == "time" && clock[sel.Sel.Name] {
				t.Errorf("%s: %s calls time.%s: a decision's time is Snapshot.Now", pkg, filepath.Base(f), sel.Sel.Name)
			}
			return true
		})
	}
}
