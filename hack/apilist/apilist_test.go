package main

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPI: the checked-in api/ lists the public API exactly (make api
// rewrites it); at most 13 public packages, no test double among them.
func TestAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the module's export data")
	}
	if err := run(filepath.Join("..", ".."), filepath.Join("..", "..", "api"), true); err != nil {
		t.Fatal(err)
	}
}

// TestCompareNamesTheChange: a changed, a new and a removed package file
// are each reported, with the lines that differ.
func TestCompareNamesTheChange(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir, map[string][]byte{"a.txt": []byte("func A()\n"), "gone.txt": []byte("func G()\n")}); err != nil {
		t.Fatal(err)
	}
	err := compare(dir, map[string][]byte{"a.txt": []byte("func A(int)\n"), "new.txt": []byte("func N()\n")})
	if err == nil {
		t.Fatal("a changed API passed")
	}
	for _, want := range []string{"- func A()", "+ func A(int)", "new.txt: missing", "gone.txt: no such public package", "make api"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if err := write(dir, map[string][]byte{"a.txt": []byte("func A(int)\n")}); err != nil {
		t.Fatal(err)
	}
	if err := compare(dir, map[string][]byte{"a.txt": []byte("func A(int)\n")}); err != nil {
		t.Errorf("the same API: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("write left a package's file that no longer exists: %v", err)
	}
}

// TestAPIOfSource lists a small package: constants with values, fields,
// interface methods, declared methods, an unexported name left out.
func TestAPIOfSource(t *testing.T) {
	p := typeCheck(t, `package p
const Reason = "Refused"
type Plan struct { Node string; hidden int }
type Runner interface { Run(p *Plan) error }
func (p *Plan) Done() bool { return false }
func New(node string) *Plan { return &Plan{Node: node} }
type FakeRunner struct{}
func internal() {}
`)
	got := strings.Join(apiOf(p), "\n")
	want := strings.Join([]string{
		`const Reason untyped string = "Refused"`,
		`func New(node string) *Plan`,
		`method (*Plan) Done() bool`,
		`type FakeRunner struct`,
		`type Plan struct`,
		`type Plan struct, Node string`,
		`type Runner interface`,
		`type Runner interface, Run(p *Plan) error`,
	}, "\n")
	if got != want {
		t.Errorf("apiOf =\n%s\nwant\n%s", got, want)
	}
	if err := noDoubles([]*types.Package{p}); err == nil || !strings.Contains(err.Error(), "p.FakeRunner") {
		t.Errorf("noDoubles = %v, want FakeRunner named", err)
	}
}

func typeCheck(t *testing.T, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parseFile(fset, src)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	p, err := conf.Check("p", fset, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseFile(fset *token.FileSet, src string) ([]*ast.File, error) {
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	return []*ast.File{f}, err
}
