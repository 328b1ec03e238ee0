package plancheck

import (
	"go/ast"
	"go/types"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// core are the packages that decide: the plan is made of their
// functions, and none runs once the executor acts.
var core = []string{
	Module + "/internal/operator/decide",
	Module + "/internal/operator/shimspec",
	Module + "/internal/operator/nodeview",
	Module + "/internal/classstep",
	Module + "/rollout",
}

// allowed are the core functions an executor may call, each with why it
// decides nothing: it reads what the plan or the snapshot holds, or
// renders it.
var allowed = map[string]string{
	"(*" + Module + "/internal/operator/decide.ClassSet).Put":    "records a RuntimeClass the executor wrote, so that a later write of the plan finds it",
	"(" + Module + "/internal/classstep.Predecessor).String":     "renders the predecessor a takeover names, for a log line",
	"(" + Module + "/internal/operator/decide.Notice).Answered":  "appends the API server's answer to the Event the plan says of a refused write",
	"(" + Module + "/internal/operator/decide.Notice).Related":   "reads the object the plan's Event relates to",
	"(" + Module + "/internal/operator/decide.Notice).Regarding": "reads the Shim the plan's Event regards",
	Module + "/internal/operator/decide.Gathered":                "renders the notes the plan's actions gathered under one reason as its one Event",
	Module + "/internal/operator/nodeview.CanaryHash":            "renders the Shim's canary as the Job's annotation",
	Module + "/internal/operator/shimspec.PullSecretName":        "renders the pull secret the Shim names into the Job",
	Module + "/internal/operator/shimspec.TrustedRootKey":        "renders the trusted root the Shim names into the Job",
}

func isCore(path string) bool { return slices.Contains(core, path) }

// operator is the operator's program, loaded once for every test.
var operator struct {
	once sync.Once
	prog *Program
	err  error
}

func operatorProgram(t *testing.T) *Program {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles the operator's dependencies' export data")
	}
	operator.once.Do(func() {
		wd, _ := os.Getwd()
		operator.prog, operator.err = Load(wd+"/../..", "./operator")
	})
	if operator.err != nil {
		t.Fatal(operator.err)
	}
	return operator.prog
}

// executors are the methods that carry out a reconcile's plan.
var executors = [][3]string{
	{Module + "/operator", "Reconciler", "carryOut"},
	{Module + "/operator", "Reconciler", "carryOutRemoval"},
}

// methods are the named methods (package, type, name) of prog.
func methods(t *testing.T, prog *Program, names ...[3]string) []*types.Func {
	t.Helper()
	var out []*types.Func
	for _, m := range names {
		fn, err := prog.Method(m[0], m[1], m[2])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fn)
	}
	return out
}

// TestNoDecidingAfterFirstWrite: from the executors of a reconcile's plan,
// nothing of the deciding core is reachable but what allowed names.
func TestNoDecidingAfterFirstWrite(t *testing.T) {
	prog := operatorProgram(t)
	for _, ref := range prog.Reachable(isCore, methods(t, prog, executors...)...) {
		if _, ok := allowed[ref.Func.FullName()]; !ok {
			t.Errorf("the executor decides: %s\n\tvia %s", ref.Func.FullName(), strings.Join(ref.Via, "\n\t  → "))
		}
	}
}

// TestReachableSeesTheDecision: the walk finds the core's functions where
// the reconcile does decide (install makes the plan), through the
// operator's own functions, so that an executor that decided would fail
// TestNoDecidingAfterFirstWrite.
func TestReachableSeesTheDecision(t *testing.T) {
	prog := operatorProgram(t)
	reconcile, err := prog.Method(Module+"/operator", "Reconciler", "Reconcile")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, ref := range prog.Reachable(isCore, reconcile) {
		found[ref.Func.FullName()] = true
	}
	for _, want := range []string{Module + "/internal/operator/decide.PlanInstall", Module + "/internal/operator/decide.PlanRemoval", Module + "/internal/operator/decide.Records"} {
		if !found[want] {
			t.Errorf("Reconcile reaches %s, yet the walk did not find it", want)
		}
	}
}

// TestCoreHoldsNoLock: the deciding core imports no package sync: it
// decides on values it owns (copies of the snapshot) and shares nothing
// that would need a lock; what carrying out gathers (Events, the
// RuntimeClasses written) is the executor's own.
func TestCoreHoldsNoLock(t *testing.T) {
	prog := operatorProgram(t)
	checked := 0
	for path, pkg := range prog.Pkgs {
		if !isCore(path) {
			continue
		}
		checked++
		for _, imp := range pkg.Imports() {
			if imp.Path() == "sync" || imp.Path() == "sync/atomic" {
				t.Errorf("%s imports %s: the core holds a lock", path, imp.Path())
			}
		}
	}
	if checked < 3 {
		t.Errorf("%d core packages checked, want decide, shimspec and nodeview at least", checked)
	}
}

// TestOneObserve: a snapshot is built in one place, operator.observe,
// for a reconcile and a preview alike: no other function of the
// operator's calls decide.NewSnapshot or decide.BuildViews.
func TestOneObserve(t *testing.T) {
	prog := operatorProgram(t)
	builders := map[string]bool{Module + "/internal/operator/decide.NewSnapshot": true, Module + "/internal/operator/decide.BuildViews": true}
	const observe = Module + "/operator.observe"
	users := map[string]bool{}
	for fn, fd := range prog.Decls {
		if isCore(fn.Pkg().Path()) || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if used, ok := prog.Info.Uses[id].(*types.Func); ok && builders[used.FullName()] {
					users[fn.FullName()] = true
					if fn.FullName() != observe {
						t.Errorf("%s calls %s: a snapshot is built by %s alone", fn.FullName(), used.FullName(), observe)
					}
				}
			}
			return true
		})
	}
	if !users[observe] {
		t.Errorf("%s builds no snapshot (users: %v)", observe, users)
	}
}
