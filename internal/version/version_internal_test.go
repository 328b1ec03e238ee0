package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name, stamped, module string
		info                  bool
		want                  string
	}{
		{name: "stamped wins", stamped: "v1.2.3", module: "v1.0.0", info: true, want: "v1.2.3"},
		{name: "module version", module: "v1.0.0", info: true, want: "v1.0.0"},
		{name: "pseudo-version of a work tree", module: "v0.0.0-20261126104400-1eb1454abcde+dirty", info: true, want: "v0.0.0-20261126104400-1eb1454abcde+dirty"},
		{name: "no build info", want: "(devel)"},
		{name: "empty module version", info: true, want: "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bi *debug.BuildInfo
			if tc.info {
				bi = &debug.BuildInfo{Main: debug.Module{Path: "github.com/shimkit/shimkit", Version: tc.module}}
			}
			if got := resolve(tc.stamped, bi, tc.info); got != tc.want {
				t.Errorf("resolve() = %q, want %q", got, tc.want)
			}
		})
	}
}
