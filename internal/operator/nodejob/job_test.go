package nodejob_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func readPlan(t testing.TB, name string) *plan.NodePlan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// TestBuildGolden: the Job of a plan, whole, against testdata: pinned to
// the plan's node, the plan mounted from its annotation, the node's
// directories, the credentials and trusted root only where the plan reads
// them, the final exit codes failing the Job at once.
func TestBuildGolden(t *testing.T) {
	spec := nodejob.Spec{
		Name: "shim-i-demo-node-1-0123456789", Namespace: "shimkit-system", Image: "registry.example/shimkit-installer:v0.1.0",
		ImagePullPolicy: corev1.PullIfNotPresent, ServiceAccount: "shimkit-installer", BackoffLimit: 2, Deadline: 10 * time.Minute, TTL: time.Hour,
		PullSecret: "registry-creds", TrustedRoot: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sigstore"}, Key: "root.json"},
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "my-operator"},
		Annotations: map[string]string{"example.com/owner": "wasm-runtime"},
		Owners:      []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Runtime", Name: "wasm", UID: "uid-wasm"}},
	}
	keyless := func(p *plan.NodePlan) {
		p.Artifact.Verification = &plan.Verification{Keyless: &plan.Keyless{
			Issuer: "https://token.actions.githubusercontent.com", Subject: "https://github.com/example/shims/.github/workflows/release.yaml@refs/tags/v1",
			TrustedRootPath: nodejob.TrustedRootPath}}
	}
	// A node whose /opt and /usr/local/bin are read-only (COS): the
	// bundles elsewhere, no links; the bundle root's parent mounted.
	cos := func(s *nodejob.Spec) { s.BundleRoot, s.LinkDir = "/home/kubernetes/bin/shimkit", "-" }
	// The bundle in an image: the kubelet mounts it (or copies it, on a
	// node that cannot mount image volumes), with the pull secret.
	image := func(p *plan.NodePlan) {
		d := "sha256:" + strings.Repeat("cd", 32)
		p.Artifact = &plan.Artifact{Type: plan.SourceImage, Reference: "registry.example/shims/demo@" + d, Digest: d, Path: nodejob.ImageDir(p.Shim.Name), Platform: "linux/amd64"}
	}
	copying := func(s *nodejob.Spec) { s.ImageWay = nodejob.ImageCopy }
	for _, tc := range []struct {
		name, plan string
		change     func(*plan.NodePlan)
		spec       func(*nodejob.Spec)
	}{
		{"oci-pull-secret", "oci-pull-secret", nil, nil},
		{"keyless", "oci-pull-secret", keyless, nil},
		{"uninstall", "uninstall", nil, nil},
		{"bundle-root", "uninstall", nil, cos},
		{"image-volume", "oci-pull-secret", image, nil},
		{"image-copy", "oci-pull-secret", image, copying},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			p := readPlan(t, tc.plan)
			if tc.change != nil {
				tc.change(p)
			}
			spec := spec
			if tc.spec != nil {
				tc.spec(&spec)
			}
			job, err := nodejob.Build(p, spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".job.yaml"), got, *update)
		})
	}
}

func TestBuildNamesWhatIsMissing(t *testing.T) {
	p := readPlan(t, "uninstall")
	for _, spec := range []nodejob.Spec{
		{Namespace: "ns", Image: "i"},
		{Name: "j", Image: "i"},
		{Name: "j", Namespace: "ns"},
	} {
		_, err := nodejob.Build(p, spec)
		if err == nil || !strings.Contains(err.Error(), "node-1") || !strings.Contains(err.Error(), "Spec.") {
			t.Errorf("Build(%+v) = %v, want an error naming the node and the field", spec, err)
		}
	}
}

// TestGracePeriodCoversARollback: the pod outlives a restart's health wait
// and the rollback SIGTERM starts.
func TestGracePeriodCoversARollback(t *testing.T) {
	r := plan.Restart{Timeout: plan.Duration(90 * time.Second)}
	got := time.Duration(nodejob.GracePeriodSeconds(r)) * time.Second
	if want := r.HealthTimeout() + r.GracePeriod(); got < want {
		t.Errorf("grace period %v < health wait and rollback %v", got, want)
	}
}
