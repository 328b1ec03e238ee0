package plancheck

import (
	"go/ast"
	"go/types"
	"strings"
	"testing"
)

// notice is the type of every Event a plan says.
const notice = Module + "/internal/operator/decide.Notice"

// emitters are the only functions that hand an Event to the events API:
// the Recorder, which takes a plan's Notice.
var emitters = map[string]bool{
	"(*" + Module + "/internal/operator/phase.Recorder).Say": true,
}

// TestEventsArePlanned: every Event the operator emits once it acts is
// one its plan says. What the executors run (from carryOut,
// carryOutRemoval and the Reporter's Flush of the gathered notes) builds
// no decide.Notice and changes no field of one: it only passes on the
// plan's, through the allowed core functions (Answered, which appends the
// API server's answer to a refused write's Notice; Gathered, which makes
// the one Event of a reason's gathered notes). And no function of the
// operator but the Recorder's Say calls the events API.
func TestEventsArePlanned(t *testing.T) {
	prog := operatorProgram(t)
	roots := methods(t, prog, append(executors, [3]string{Module + "/internal/operator/status", "Reporter", "Flush"})...)
	declared := prog.Declared(isCore, roots...)
	if len(declared) < 20 {
		t.Fatalf("the executors run %d functions; the walk lost them", len(declared))
	}
	for fd, ref := range declared {
		for _, bad := range prog.noticesMade(fd) {
			t.Errorf("%s %s: the executor makes an Event the plan did not say\n\tvia %s", prog.Fset.Position(bad.Pos()), ref.Func.FullName(), strings.Join(ref.Via, "\n\t  → "))
		}
	}
	for fn, fd := range prog.Decls {
		if emitters[fn.FullName()] {
			continue
		}
		for _, call := range prog.eventsAPICalls(fd) {
			t.Errorf("%s %s calls the events API: only the Recorder's Say does, with a plan's Notice", prog.Fset.Position(call.Pos()), fn.FullName())
		}
	}
}

// noticesMade are the places in fd that build a decide.Notice (a
// composite literal) or write a field of one.
func (prog *Program) noticesMade(fd *ast.FuncDecl) []ast.Node {
	var out []ast.Node
	isNotice := func(e ast.Expr) bool {
		tv := prog.Info.TypeOf(e)
		if tv == nil {
			return false
		}
		if p, ok := tv.(*types.Pointer); ok {
			tv = p.Elem()
		}
		return types.TypeString(tv, nil) == notice
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if isNotice(n) {
				out = append(out, n)
			}
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && isNotice(sel.X) {
					out = append(out, lhs)
				}
			}
		}
		return true
	})
	return out
}

// eventsAPICalls are the calls in fd of a method of client-go's event
// recorders (tools/events, tools/record; tools/events' recorder is an
// alias of tools/internal/events').
func (prog *Program) eventsAPICalls(fd *ast.FuncDecl) []ast.Node {
	return prog.calls(fd, func(fn *types.Func) bool {
		p := fn.Pkg().Path()
		return strings.HasPrefix(p, "k8s.io/client-go/tools/") && (strings.HasSuffix(p, "/events") || strings.HasSuffix(p, "/record"))
	})
}

// calls are the references in fd to a function (or method) of a package
// that match says.
func (prog *Program) calls(fd *ast.FuncDecl, match func(*types.Func) bool) []ast.Node {
	var out []ast.Node
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if fn, ok := prog.Info.Uses[sel.Sel].(*types.Func); ok && fn.Pkg() != nil && match(fn) {
				out = append(out, sel)
			}
		}
		return true
	})
	return out
}

// writers are the functions of the executors that write to the API
// server, each with the part of the plan it carries out: a write that is
// not one of the plan's fails TestWritesArePlanned until it is named here.
// The writes of the module's public packages (nodelabel, runtimeclass)
// are made through the executor's actions and the RuntimeClass role,
// whose plan parts name them.
var writers = map[string]string{
	op + "executor).do":                                                 "the actions DeleteJob and PatchJob (Plan.Records)",
	op + "executor).finalizer":                                          "the actions AddFinalizer and RemoveFinalizer (Plan.Finalize)",
	op + "executor).untaint":                                            "the action Untaint (Plan.Taints)",
	op + "executor).fence":                                              "the actions Fence and Unfence (Plan.Relabel)",
	op + "executor).cordon":                                             "the action Cordon (Plan.Disrupt)",
	op + "executor).release":                                            "the action Release (Plan.Disrupt)",
	op + "executor).evict":                                              "the action Evict (Plan.Disrupt, Plan.Evict)",
	op + "executor).keepLog":                                            "the action KeepLog (Plan.Records): the Job kept longer",
	Module + "/internal/operator/results.KeepLog":                       "the action KeepLog (Plan.Records): the copy of the log",
	op + "jobStarter).createJob":                                        "a Start (Plan.Starts, Plan.Verify): its Job, after the finished one it Replaces",
	Module + "/internal/operator/classes.unlabelNode":                   "an RCMRelease (Plan.RCMReleases)",
	"(*" + Module + "/internal/operator/status.Reporter).Update":        "the StatusPlan (Plan.Status)",
	"(*" + Module + "/internal/operator/revision.Store).create":         "the StatusPlan's Revision (Plan.Status)",
	"(*" + Module + "/internal/operator/revision.Store).deleteRevision": "the StatusPlan's Drop (Plan.Status)",
}

// op prefixes the methods of the operator's roles.
const op = "(*" + Module + "/operator."

// TestWritesArePlanned: every function the executors run that writes to
// the API server (a client's Create, Update, Patch, Delete, Apply, its
// status and subresource writers) is one that carries out a part of the
// plan (writers), and each writer named is still one.
func TestWritesArePlanned(t *testing.T) {
	prog := operatorProgram(t)
	found := map[string]bool{}
	for fd, ref := range prog.Declared(isCore, methods(t, prog, executors...)...) {
		if len(prog.apiWrites(fd)) == 0 {
			continue
		}
		name := ref.Func.FullName()
		found[name] = true
		if _, ok := writers[name]; !ok {
			t.Errorf("%s writes to the API server, and is no part of the plan that writers names\n\tvia %s", name, strings.Join(ref.Via, "\n\t  → "))
		}
	}
	for name := range writers {
		if !found[name] {
			t.Errorf("writers names %s, which the executors no longer run or which writes nothing", name)
		}
	}
}

// apiWrites are the calls in fd of a write method of controller-runtime's
// client or a client-go typed client.
func (prog *Program) apiWrites(fd *ast.FuncDecl) []ast.Node {
	return prog.calls(fd, func(fn *types.Func) bool {
		p := fn.Pkg().Path()
		if p != "sigs.k8s.io/controller-runtime/pkg/client" && !strings.HasPrefix(p, "k8s.io/client-go/kubernetes/typed/") {
			return false
		}
		switch fn.Name() {
		case "Create", "Update", "Patch", "Delete", "DeleteAllOf", "Apply", "Evict", "EvictV1":
			return true
		}
		return false
	})
}
