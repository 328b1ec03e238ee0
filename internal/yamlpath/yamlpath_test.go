package yamlpath_test

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/yamlpath"
)

func TestGet(t *testing.T) {
	var doc any
	if err := yaml.Unmarshal([]byte(`
spec:
  containers:
    - name: manager
      args: ["--a", "--b"]
    - name: sidecar
`), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []string
		want any
	}{
		{[]string{"spec", "containers", "name=manager", "args", "1"}, "--b"},
		{[]string{"spec", "containers", "1", "name"}, "sidecar"},
		{[]string{"spec", "containers", "name=none"}, nil},
		{[]string{"spec", "containers", "7"}, nil},
		{[]string{"spec", "containers", "-1"}, nil},
		{[]string{"spec", "missing", "deeper"}, nil},
		{[]string{"spec", "containers", "0", "name", "past a scalar"}, nil},
	} {
		if got := yamlpath.Get(doc, tc.path...); got != tc.want {
			t.Errorf("Get(%v) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
