package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"

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

// A whole Shim of a page that names a sample (operator/config/samples/...)
// and has the sample's name is that sample: the page shows what the
// repository ships and its tests install.
func TestDocShimsAreTheSamples(t *testing.T) {
	root := repoRoot()
	samples, err := filepath.Glob(filepath.Join(root, "operator/config/samples/shim_*.yaml"))
	if err != nil || len(samples) < 3 {
		t.Fatalf("samples: %v %v", samples, err)
	}
	shown := 0
	for _, page := range []string{"README.md", "docs/guides/bundles.md", "docs/getting-started.md", "docs/tutorial.md"} {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range samples {
			rel, _ := filepath.Rel(root, f)
			if !strings.Contains(string(data), rel) {
				continue
			}
			sample := decodeShim(t, f, mustRead(t, f))
			for _, doc := range shimDocs(string(data)) {
				s := decodeShim(t, page, []byte(doc))
				if s.Name != sample.Name {
					continue
				}
				shown++
				if !equality.Semantic.DeepEqual(s.Spec, sample.Spec) {
					t.Errorf("%s shows Shim %s, and names %s, which differs (-sample +page):\n%s", page, s.Name, rel, cmp.Diff(sample.Spec, s.Spec))
				}
			}
		}
	}
	if shown == 0 {
		t.Error("no page shows a sample it names")
	}
}

func decodeShim(t *testing.T, from string, data []byte) *v1alpha1.Shim {
	t.Helper()
	s := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		t.Fatalf("%s: %v", from, err)
	}
	return s
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
