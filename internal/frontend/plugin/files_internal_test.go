package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	spinDoc   = "apiVersion: containerd.x-k8s.io/v1alpha1\nkind: Shim\nmetadata: {name: spin}\n"
	gvisorDoc = "apiVersion: containerd.x-k8s.io/v1alpha1\nkind: Shim\nmetadata: {name: gvisor}\n"
)

// TestReadShims: -f reads every document of a file, of standard input
// and of a directory's YAML and JSON files, as kubectl apply -f; another
// kind, a Shim named twice and a file of no Shim are refused, naming the
// document.
func TestReadShims(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	two := write("two.yaml", "# the sandboxes\n---\n"+spinDoc+"---\n"+gvisorDoc+"---\n")
	write("shims/a.yaml", spinDoc)
	write("shims/b.json", `{"apiVersion": "containerd.x-k8s.io/v1alpha1", "kind": "Shim", "metadata": {"name": "gvisor"}}`)
	write("shims/README.md", "not a manifest")
	deploy := write("deploy.yaml", spinDoc+"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
	twice := write("twice.yaml", spinDoc+"---\n"+spinDoc)
	empty := write("empty.yaml", "# nothing\n---\n")
	core := write("core.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	noKind := write("nokind.yaml", "spec: {}\n")

	for _, tc := range []struct {
		file, stdin string
		want        []string // the Shims' names and sources
		err         string
	}{
		{file: two, want: []string{"spin " + two + " (document 1)", "gvisor " + two + " (document 2)"}},
		{file: "-", stdin: spinDoc + "---\n" + gvisorDoc, want: []string{"spin - (document 1)", "gvisor - (document 2)"}},
		{file: filepath.Join(dir, "shims"), want: []string{"spin " + filepath.Join(dir, "shims", "a.yaml"), "gvisor " + filepath.Join(dir, "shims", "b.json")}},
		{file: deploy, err: deploy + " (document 2): apps/v1 Deployment web is not a Shim (containerd.x-k8s.io/v1alpha1)"},
		{file: core, err: core + ": v1 ConfigMap c is not a Shim"},
		{file: noKind, err: noKind + ": a document without apiVersion and kind is not a Shim"},
		{file: twice, err: twice + " (document 2): Shim spin again (first in " + twice + " (document 1))"},
		{file: empty, err: empty + ": no Shim in it"},
		{file: filepath.Join(dir, "missing.yaml"), err: "no such file or directory"},
	} {
		got, err := readShims(tc.file, strings.NewReader(tc.stdin))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v; want %q", tc.file, err, tc.err)
			}
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.shim.Name+" "+s.source)
		}
		if err != nil || strings.Join(names, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, %v; want %q", tc.file, names, err, tc.want)
		}
	}
}
