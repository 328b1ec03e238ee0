package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Every whole Shim of the README and the site is one a real API server
// with the CRD admits (its CEL and OpenAPI rules), created as a dry run.
func TestDocShimsAdmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiserver and etcd (make bins)")
	}
	root := repoRoot()
	files := []string{filepath.Join(root, "README.md")}
	if err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".md" {
			files = append(files, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var shims []*v1alpha1.Shim
	var from []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range shimDocs(string(data)) {
			s := &v1alpha1.Shim{}
			if err := yaml.UnmarshalStrict([]byte(doc), s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			shims, from = append(shims, s), append(from, f)
		}
	}
	if len(shims) < 2 {
		t.Fatalf("only %d whole Shims in the README and docs/; the README's example is one", len(shims))
	}
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	for i, s := range shims {
		if err := env.Client.Create(context.Background(), s, client.DryRunAll); err != nil {
			rel, _ := filepath.Rel(root, from[i])
			t.Errorf("%s: Shim %s is refused: %v", rel, s.Name, err)
		}
	}
}
