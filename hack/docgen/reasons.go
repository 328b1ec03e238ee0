package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shimkit/shimkit/installer/plan"
)

// constant is one exported string constant with its doc comment.
type constant struct {
	name, value, doc string
}

// constGroup is one const block: its doc comment and its constants.
type constGroup struct {
	doc    string
	consts []constant
}

// constGroups reads the const blocks of the Go package in dir (tests
// excluded) whose names start with one of prefixes, in source order.
func constGroups(dir string, prefixes ...string) ([]constGroup, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	var groups []constGroup
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			g := constGroup{doc: oneLine(gd.Doc.Text())}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if len(vs.Names) != 1 || len(vs.Values) != 1 || !hasPrefix(vs.Names[0].Name, prefixes) {
					continue
				}
				lit, ok := vs.Values[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, err
				}
				text := oneLine(vs.Doc.Text())
				// "// ReasonX: what it means." reads as "What it means."
				if _, rest, ok := strings.Cut(text, vs.Names[0].Name+": "); ok {
					text = rest
					if first, _, _ := strings.Cut(rest, " "); !strings.Contains(first, ".") {
						text = strings.ToUpper(rest[:1]) + rest[1:] // not a field path
					}
				}
				g.consts = append(g.consts, constant{name: vs.Names[0].Name, value: v, doc: text})
			}
			if len(g.consts) > 0 {
				groups = append(groups, g)
			}
		}
	}
	return groups, nil
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// oneLine joins a comment's lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// reasonsReference is the page of every reason the status shows: the
// installer's failure reasons (installer/plan) and the Shim's condition
// and skip reasons (operator/api/v1alpha1).
func reasonsReference(planDir, apiDir string) ([]byte, error) {
	planGroups, err := constGroups(planDir, "Reason")
	if err != nil {
		return nil, err
	}
	apiGroups, err := constGroups(apiDir, "Reason", "Skip")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Status reasons reference\n\n")
	b.WriteString("Every reason a Shim's status, its Events and its nodes' annotations can show, with the comment of its\n")
	b.WriteString("constant in the code. What to do about each: [Operating and troubleshooting](../guides/operating.md#troubleshooting).\n")
	b.WriteString("\n## Node failure reasons\n\n")
	b.WriteString("Why an installer failed on a node (package `installer/plan`): in `status.failingNodes`, the Node's\n")
	b.WriteString("`failed.shim.containerd.x-k8s.io/<shim>` annotation, the Warning Event and `shimkit_node_failures_total`'s\n")
	b.WriteString("`reason` label. *Final* reasons (`plan.Reason.Permanent`) end the node's Job at once: retrying the same\n")
	b.WriteString("plan cannot change them; the others keep the Job's retries.\n\n")
	b.WriteString("| Reason | Final | Meaning |\n| --- | --- | --- |\n")
	n := 0
	for _, g := range planGroups {
		for _, c := range g.consts {
			final := "no"
			if plan.Reason(c.value).Permanent() {
				final = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.value, final, escapeCell(c.doc))
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no Reason constant", planDir)
	}
	b.WriteString("\n## Shim condition and skip reasons\n\n")
	b.WriteString("The `reason` of the Shim's conditions (`kubectl get shim NAME -o yaml`, `status.conditions`) and of\n")
	b.WriteString("`status.skipped` (package `operator/api/v1alpha1`).\n")
	for _, g := range apiGroups {
		title := heading(g.doc)
		fmt.Fprintf(&b, "\n### %s\n\n", title)
		if g.doc != title+"." {
			b.WriteString(g.doc + "\n\n")
		}
		b.WriteString("| Reason | Meaning |\n| --- | --- |\n")
		for _, c := range g.consts {
			fmt.Fprintf(&b, "| `%s` | %s |\n", c.value, escapeCell(c.doc))
		}
	}
	return b.Bytes(), nil
}

// heading is a group comment's first clause: up to its first comma,
// colon, parenthesis or full stop.
func heading(s string) string {
	if s == "" {
		return "Other reasons"
	}
	if i := strings.IndexAny(s, ",:(."); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
