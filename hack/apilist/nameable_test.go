package main

import (
	"go/token"
	"go/types"
	"strings"
	"testing"
)

// TestUnnameable: a public function, field or method of an aliased
// internal type that names an internal type no public package exports is
// refused, naming both; the same type exported under a public alias
// passes.
func TestUnnameable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		aliased bool
		want    []string
	}{
		{"leaks", false, []string{"pub.F names " + module + "/internal/x.Hidden", "pub.S.Field names " + module + "/internal/x.Hidden", "pub.Exported.Take names " + module + "/internal/x.Hidden"}},
		{"aliased", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unnameable([]*types.Package{leakyPackage(tc.aliased)})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("internal types in exported signatures passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// leakyPackage is a public package whose F(x.Hidden), S.Field x.Hidden and
// Exported (an alias of x.Exported) whose method Take(x.Hidden) name the
// internal type x.Hidden; aliased: it exports Hidden too.
func leakyPackage(aliased bool) *types.Package {
	x := types.NewPackage(module+"/internal/x", "x")
	hidden := types.NewNamed(types.NewTypeName(token.NoPos, x, "Hidden", nil), types.Typ[types.Int], nil)
	exported := types.NewNamed(types.NewTypeName(token.NoPos, x, "Exported", nil), types.NewStruct(nil, nil), nil)
	recv := types.NewVar(token.NoPos, x, "e", exported)
	take := types.NewSignatureType(recv, nil, nil, types.NewTuple(types.NewVar(token.NoPos, x, "h", hidden)), nil, false)
	exported.AddMethod(types.NewFunc(token.NoPos, x, "Take", take))

	pub := types.NewPackage(module+"/pub", "pub")
	param := types.NewTuple(types.NewVar(token.NoPos, pub, "h", hidden))
	pub.Scope().Insert(types.NewFunc(token.NoPos, pub, "F", types.NewSignatureType(nil, nil, nil, param, nil, false)))
	st := types.NewStruct([]*types.Var{types.NewField(token.NoPos, pub, "Field", hidden, false)}, nil)
	pub.Scope().Insert(types.NewNamed(types.NewTypeName(token.NoPos, pub, "S", nil), st, nil).Obj())
	pub.Scope().Insert(types.NewAlias(types.NewTypeName(token.NoPos, pub, "Exported", nil), exported).Obj())
	if aliased {
		pub.Scope().Insert(types.NewAlias(types.NewTypeName(token.NoPos, pub, "Hidden", nil), hidden).Obj())
	}
	return pub
}
