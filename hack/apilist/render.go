package main

import (
	"fmt"
	"go/types"
	"sort"
	"strings"
)

// render lists each package's exported API, a file per package.
func render(pkgs []*types.Package) map[string][]byte {
	files := map[string][]byte{}
	for _, p := range pkgs {
		lines := apiOf(p)
		if len(lines) == 0 {
			lines = []string{"(no exported names)"}
		}
		files[fileName(p.Path())] = []byte(strings.Join(lines, "\n") + "\n")
	}
	return files
}

// apiOf returns the sorted lines of a package's exported API.
func apiOf(p *types.Package) []string {
	qual := func(other *types.Package) string {
		if other == p {
			return ""
		}
		return other.Path()
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, types.TypeString(o.Type(), qual), o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, types.TypeString(o.Type(), qual))
		case *types.Func:
			add("func %s%s", name, strings.TrimPrefix(types.TypeString(o.Type(), qual), "func"))
		case *types.TypeName:
			lines = append(lines, typeAPI(name, o, qual)...)
		}
	}
	sort.Strings(lines)
	return lines
}

// typeAPI lists a type: its kind, a struct's exported fields, an
// interface's methods, its declared methods. An alias lists what it
// names; an alias of a type users cannot import (an internal one) lists
// that type's fields and methods too, under the alias's name.
func typeAPI(name string, o *types.TypeName, qual types.Qualifier) []string {
	if o.IsAlias() {
		out := []string{fmt.Sprintf("type %s = %s", name, types.TypeString(types.Unalias(o.Type()), qual))}
		if n, ok := types.Unalias(o.Type()).(*types.Named); ok && n.Obj().Pkg() != nil && !isPublic(n.Obj().Pkg().Path()) && strings.HasPrefix(n.Obj().Pkg().Path(), module) {
			out = append(out, shapeOf(name, n, qual)...)
		}
		return out
	}
	n, ok := o.Type().(*types.Named)
	if !ok {
		return []string{fmt.Sprintf("type %s %s", name, types.TypeString(o.Type(), qual))}
	}
	return shapeOf(name+typeParams(n, qual), n, qual)
}

// shapeOf lists a named type's underlying shape and declared methods.
func shapeOf(name string, n *types.Named, qual types.Qualifier) []string {
	var out []string
	switch u := n.Underlying().(type) {
	case *types.Struct:
		out = append(out, fmt.Sprintf("type %s struct", name))
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				out = append(out, fmt.Sprintf("type %s struct, embedded %s", name, types.TypeString(f.Type(), qual)))
				continue
			}
			out = append(out, fmt.Sprintf("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), qual)))
		}
	case *types.Interface:
		out = append(out, fmt.Sprintf("type %s interface", name))
		for i := range u.NumEmbeddeds() {
			out = append(out, fmt.Sprintf("type %s interface, embedded %s", name, types.TypeString(u.EmbeddedType(i), qual)))
		}
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if m.Exported() {
				out = append(out, fmt.Sprintf("type %s interface, %s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func")))
			}
		}
	default:
		out = append(out, fmt.Sprintf("type %s %s", name, types.TypeString(u, qual)))
	}
	for i := range n.NumMethods() {
		m := n.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + name
		}
		out = append(out, fmt.Sprintf("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(types.TypeString(sig, qual), "func")))
	}
	return out
}

// typeParams renders a generic type's parameters ("[T any]").
func typeParams(n *types.Named, qual types.Qualifier) string {
	tp := n.TypeParams()
	if tp == nil || tp.Len() == 0 {
		return ""
	}
	var parts []string
	for i := range tp.Len() {
		p := tp.At(i)
		parts = append(parts, p.Obj().Name()+" "+types.TypeString(p.Constraint(), qual))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
