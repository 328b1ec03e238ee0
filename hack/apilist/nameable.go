package main

import (
	"fmt"
	"go/types"
	"sort"
	"strings"
)

// unnameable refuses an exported signature of a public package (a
// function's, a method's, an exported field's, a variable's, also those
// of an internal type a public alias exports) that names a type of an
// internal package no public package exports under an alias: a user
// cannot write that type, and a release would promise it all the same.
func unnameable(pkgs []*types.Package) error {
	aliased := map[*types.TypeName]bool{}
	for _, p := range pkgs {
		for _, name := range p.Scope().Names() {
			if o, ok := p.Scope().Lookup(name).(*types.TypeName); ok && o.Exported() && o.IsAlias() {
				if n, ok := types.Unalias(o.Type()).(*types.Named); ok {
					aliased[n.Obj()] = true
				}
			}
		}
	}
	bad := map[string]bool{}
	for _, p := range pkgs {
		for _, name := range p.Scope().Names() {
			obj := p.Scope().Lookup(name)
			if !obj.Exported() {
				continue
			}
			where := p.Path() + "." + name
			check := func(t types.Type, what string) {
				for _, n := range namedIn(t, nil) {
					if pkg := n.Obj().Pkg(); pkg != nil && strings.HasPrefix(pkg.Path(), module+"/") && !isPublic(pkg.Path()) && !aliased[n.Obj()] {
						bad[fmt.Sprintf("%s%s names %s.%s", where, what, pkg.Path(), n.Obj().Name())] = true
					}
				}
			}
			switch o := obj.(type) {
			case *types.Func, *types.Var:
				check(o.Type(), "")
			case *types.TypeName:
				n, ok := types.Unalias(o.Type()).(*types.Named)
				if !ok {
					check(o.Type(), "")
					continue
				}
				if pkg := n.Obj().Pkg(); o.IsAlias() && pkg != nil && isPublic(pkg.Path()) {
					continue // listed where it is declared
				}
				checkShape(n, check)
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	lines := make([]string, 0, len(bad))
	for l := range bad {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return fmt.Errorf("exported signatures name internal types no public package exports (export them under an alias, or keep them out of the signature):\n%s", strings.Join(lines, "\n"))
}

// checkShape checks the exported fields, interface methods and methods
// of a named type.
func checkShape(n *types.Named, check func(types.Type, string)) {
	switch u := n.Underlying().(type) {
	case *types.Struct:
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				check(f.Type(), "."+f.Name())
			}
		}
	case *types.Interface:
		for i := range u.NumExplicitMethods() {
			if m := u.ExplicitMethod(i); m.Exported() {
				check(m.Type(), "."+m.Name())
			}
		}
	default:
		check(u, "")
	}
	for i := range n.NumMethods() {
		if m := n.Method(i); m.Exported() {
			check(m.Type(), "."+m.Name())
		}
	}
}

// namedIn lists the named types a type is written with: itself, or the
// elements, parameters, results and type arguments it is made of.
func namedIn(t types.Type, out []*types.Named) []*types.Named {
	switch t := t.(type) {
	case *types.Alias:
		return namedIn(types.Unalias(t), out)
	case *types.Named:
		out = append(out, t)
		for i := range t.TypeArgs().Len() {
			out = namedIn(t.TypeArgs().At(i), out)
		}
	case *types.Pointer:
		return namedIn(t.Elem(), out)
	case *types.Slice:
		return namedIn(t.Elem(), out)
	case *types.Array:
		return namedIn(t.Elem(), out)
	case *types.Chan:
		return namedIn(t.Elem(), out)
	case *types.Map:
		return namedIn(t.Elem(), namedIn(t.Key(), out))
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				out = namedIn(tup.At(i).Type(), out)
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			out = namedIn(t.Field(i).Type(), out)
		}
	}
	return out
}
