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
// functions it can enter; an interface method is not followed).
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
			callee := prog.callee(call)
			if callee == nil || prog.Decls[callee] == nil {
				return true
			}
			w.Calls++
			queue = append(queue, callee)
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
