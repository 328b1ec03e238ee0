package plancheck

import (
	"go/ast"
	"go/types"
)

// Walk is the trip of a reconcile's context through the code: from a
// root function, every call whose arguments pass a context.Context to a
// function of the loaded packages, followed into that function (once).
// Calls counts the call sites, Files and Packages what they enter.
type Walk struct {
	Calls           int
	Files, Packages map[string]bool
}

// WalkContext follows the contexts root passes on (LoadModule loads the
// functions it can enter); a call of an interface method enters each
// method of the loaded packages' types that implements it, as a reader
// looks up the implementations.
func (prog *Program) WalkContext(root *types.Func) Walk {
	w := Walk{Files: map[string]bool{}, Packages: map[string]bool{}}
	seen := map[*types.Func]bool{}
	queue := []*types.Func{root}
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		if seen[fn] {
			continue
		}
		seen[fn] = true
		fd := prog.Decls[fn]
		if fd == nil {
			continue
		}
		w.Files[prog.Fset.Position(fd.Pos()).Filename] = true
		w.Packages[fn.Pkg().Path()] = true
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !prog.passesContext(call) {
				return true
			}
			for _, callee := range prog.callees(call) {
				if prog.Decls[callee] != nil {
					w.Calls++
					queue = append(queue, callee)
				}
			}
			return true
		})
	}
	return w
}

// passesContext: an argument of the call is a context.Context.
func (prog *Program) passesContext(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		id, ok := a.(*ast.Ident)
		if !ok {
			continue
		}
		if v, ok := prog.Info.Uses[id].(*types.Var); ok && isContext(v.Type()) {
			return true
		}
	}
	return false
}

func isContext(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

// callees are the functions a call may enter: the one it names
// statically, or the implementations of the interface method it names.
func (prog *Program) callees(call *ast.CallExpr) []*types.Func {
	if fn := prog.callee(call); fn != nil {
		return []*types.Func{fn}
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	m, ok := prog.Info.Uses[sel.Sel].(*types.Func)
	if !ok || !isInterfaceMethod(m) {
		return nil
	}
	iface, ok := m.Type().(*types.Signature).Recv().Type().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	return prog.implementations(iface, m.Name())
}

// implementations are the methods name of the loaded packages' named
// types (or their pointers) that implement iface.
func (prog *Program) implementations(iface *types.Interface, name string) []*types.Func {
	var out []*types.Func
	for _, pkg := range prog.Pkgs {
		scope := pkg.Scope()
		for _, n := range scope.Names() {
			tn, ok := scope.Lookup(n).(*types.TypeName)
			if !ok || types.IsInterface(tn.Type()) {
				continue
			}
			for _, t := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
				if !types.Implements(t, iface) {
					continue
				}
				if obj, _, _ := types.LookupFieldOrMethod(t, true, pkg, name); obj != nil {
					if fn, ok := obj.(*types.Func); ok {
						out = append(out, fn.Origin())
					}
				}
				break
			}
		}
	}
	return out
}

// callee is the function a call names statically (nil: a function value
// or an interface method).
func (prog *Program) callee(call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.IndexExpr:
		if s, ok := f.X.(*ast.SelectorExpr); ok {
			id = s.Sel
		} else if i, ok := f.X.(*ast.Ident); ok {
			id = i
		}
	}
	if id == nil {
		return nil
	}
	fn, ok := prog.Info.Uses[id].(*types.Func)
	if !ok || isInterfaceMethod(fn) {
		return nil
	}
	return fn.Origin()
}
