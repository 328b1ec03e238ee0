package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// module is the library's import path.
const module = "github.com/shimkit/shimkit"

// examplePackage is one public package with its runnable examples.
type examplePackage struct {
	path, synopsis string
	examples       []*doc.Example
	fset           *token.FileSet
}

// examplePackages reads every public package under root (not internal/,
// hack/, e2e/ or examples/) that has an example_test.go.
func examplePackages(root string) ([]examplePackage, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case "internal", "hack", "e2e", "examples", "docs", "site", "dist", "bin", "charts":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "example_test.go" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var out []examplePackage
	for _, dir := range dirs {
		p, err := readExamples(root, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func readExamples(root, dir string) (examplePackage, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return examplePackage{}, err
	}
	var files, tests []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return examplePackage{}, err
		}
		if strings.HasSuffix(n, "_test.go") {
			tests = append(tests, f)
		} else {
			files = append(files, f)
		}
	}
	rel, _ := filepath.Rel(root, dir)
	p := examplePackage{path: module, fset: fset, examples: doc.Examples(tests...)}
	if rel != "." {
		p.path += "/" + filepath.ToSlash(rel)
	}
	for _, f := range files {
		if f.Doc != nil {
			p.synopsis = (&doc.Package{}).Synopsis(f.Doc.Text())
			break
		}
	}
	return p, nil
}

// examplesReference is the page of the library's examples, each as go doc
// shows it, its "// Output:" comment the output `go test` checks.
func examplesReference(root string) ([]byte, error) {
	pkgs, err := examplePackages(root)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Library examples\n\n")
	b.WriteString("Every runnable example of the library's packages (their `example_test.go`), as `go doc` shows it:\n")
	b.WriteString("`go test` runs each one and checks its output. How the packages fit together:\n")
	b.WriteString("[Use a single package](../guides/packages.md); whole programs: `examples/embedded-operator` (the\n")
	b.WriteString("reconciler in your own manager) and `examples/image-builder` (a handler registered in a node image).\n")
	n := 0
	for _, p := range pkgs {
		if len(p.examples) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", strings.TrimPrefix(p.path, module+"/"))
		if p.synopsis != "" {
			fmt.Fprintf(&b, "`%s`: %s\n", p.path, p.synopsis)
		}
		for _, ex := range p.examples {
			name := "Example" + ex.Name // ExampleT_M: Name "T_M"; Example_suffix: "_suffix"
			fmt.Fprintf(&b, "\n### %s\n\n", name)
			if d := oneLine(ex.Doc); d != "" {
				b.WriteString(d + "\n\n")
			}
			var code bytes.Buffer
			cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
			if err := cfg.Fprint(&code, p.fset, &printer.CommentedNode{Node: ex.Code, Comments: ex.Comments}); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", p.path, name, err)
			}
			body := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(code.String()), "{"), "}")
			fmt.Fprintf(&b, "```go\n%s\n```\n", dedent(body))
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no example", root)
	}
	return b.Bytes(), nil
}

// dedent takes a block's first level of tabs off and drops the blank
// lines around it.
func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	return strings.Join(lines, "\n")
}
