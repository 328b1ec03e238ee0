package testutil

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	n    int
	tags []string
}

type outer struct {
	Name   string
	hidden *inner
	again  *inner
	byKey  map[string]*inner
	any    any
	fn     func()
}

// TestDeepCopy: the copy equals the original, unexported fields included,
// shares nothing that can be written through (a write to the original
// does not show in the copy), and keeps a pointer reached twice as one.
func TestDeepCopy(t *testing.T) {
	in := &inner{n: 1, tags: []string{"a"}}
	orig := &outer{Name: "x", hidden: in, again: in, byKey: map[string]*inner{"k": {n: 2}}, any: &inner{n: 3}, fn: func() {}}
	cp := DeepCopy(orig)
	all := cmp.Exporter(func(reflect.Type) bool { return true })
	ignoreFn := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type().Kind() == reflect.Func }, cmp.Ignore())
	if d := cmp.Diff(orig, cp, all, ignoreFn); d != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", d)
	}
	if cp.hidden != cp.again {
		t.Errorf("a pointer reached twice became two")
	}
	orig.hidden.tags[0], orig.byKey["k"].n, orig.any.(*inner).n = "changed", 20, 30
	if cp.hidden.tags[0] != "a" || cp.byKey["k"].n != 2 || cp.any.(*inner).n != 3 {
		t.Errorf("the copy shares memory with the original: %+v", cp)
	}
}
