package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shimkit/shimkit/internal/frontend/migrate"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// run runs the command and returns its exit status, stdout and stderr.
func run(t *testing.T, kubeconfig string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := migrate.Run(context.Background(), append([]string{"--kubeconfig", kubeconfig}, args...), func(string) string { return "" }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// decodeShims reads the YAML documents the command printed.
func decodeShims(t *testing.T, out string) map[string]*v1alpha1.Shim {
	t.Helper()
	shims := map[string]*v1alpha1.Shim{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		s := &v1alpha1.Shim{}
		err := dec.Decode(s)
		if errors.Is(err, io.EOF) {
			return shims
		}
		if err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		if s.Name != "" {
			shims[s.Name] = s
		}
	}
}

// TestCommand runs shimkit-operator migrate against a real API server with
// runtime-class-manager's CRDs: first only the current one (the KWasm
// group is reported absent and skipped), then both. The dry run prints
// the mapped Shims and writes nothing; the Shims it cannot map are
// reported with the reason, and so is a name in both groups. --apply
// creates the Shims, which the API server admits; run again it leaves
// them alone, and it refuses one that exists with another spec.
func TestCommand(t *testing.T) {
	crds := filepath.Join("..", "..", "..", "operator", "testdata", "rcm", "crds")
	env := testutil.StartEnvWith(t, func(e *envtest.Environment) {
		e.CRDInstallOptions.Paths = append(e.CRDInstallOptions.Paths, filepath.Join(crds, "runtime.spinkube.dev_shims.yaml"))
	}, v1alpha1.AddToScheme)
	ctx := context.Background()
	kubeconfig := testutil.WriteKubeconfig(t, env.Config, filepath.Join(t.TempDir(), "kubeconfig"))
	for _, f := range []string{"spin-v2.yaml", "wasmtime-v1.yaml", "wasmtime.yaml", "unquoted-option.yaml"} {
		if err := env.Client.Create(ctx, readRCM(t, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}

	code, out, errOut := run(t, kubeconfig, "spin-v2", "wasmtime")
	if code != 0 || !strings.Contains(errOut, "no runtime.kwasm.sh/v1alpha1 Shims: that API is not installed") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if got := decodeShims(t, out); len(got) != 2 || got["spin-v2"] == nil || got["wasmtime"] == nil {
		t.Errorf("printed %v:\n%s", got, out)
	}

	// The KWasm era's CRD and Shims too.
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(crds, "runtime.kwasm.sh_shims.yaml")}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kwasm-spin-v2.yaml", "kwasm-lunatic-v1.yaml"} {
		if err := env.Client.Create(ctx, readRCM(t, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	code, out, errOut = run(t, kubeconfig)
	if code != 1 {
		t.Errorf("exit %d with Shims skipped", code)
	}
	printed := decodeShims(t, out)
	for _, name := range []string{"spin-v2", "wasmtime-v1", "wasmtime"} {
		want, _, err := migrate.Convert(readRCM(t, name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(printed[name], want) {
			t.Errorf("printed %s:\n%#v\nwant\n%#v", name, printed[name], want)
		}
	}
	if len(printed) != 3 {
		t.Errorf("printed %d Shims:\n%s", len(printed), out)
	}
	for _, want := range []string{
		`skipped runtime.spinkube.dev/v1alpha1 Shim slight-v1: cannot be mapped: spec.containerdRuntimeOptions.CgroupDriver: "systemd" is not a TOML value`,
		`skipped runtime.kwasm.sh/v1alpha1 Shim lunatic-v1: cannot be mapped: spec.runtimeClass.handler "lunatic" is not the Shim's name "lunatic-v1"`,
		`skipped runtime.kwasm.sh/v1alpha1 Shim spin-v2: runtime.spinkube.dev/v1alpha1 Shim spin-v2 has the same name and is migrated instead`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	var list v1alpha1.ShimList
	if err := env.Client.List(ctx, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("the dry run wrote Shims: %d %v", len(list.Items), err)
	}

	// While runtime-class-manager's operator runs, --apply creates
	// nothing (a dry run warns).
	rcm := rcmDeployment(t, env.Client)
	code, out, errOut = run(t, kubeconfig, "--apply")
	if code != 1 || out != "" || !strings.Contains(errOut, "refused: runtime-class-manager's operator runs (Deployment rcm/runtime-class-manager): stop it first") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, _, errOut := run(t, kubeconfig); !strings.Contains(errOut, "warning: runtime-class-manager's operator runs (Deployment rcm/runtime-class-manager)") {
		t.Errorf("dry run, stderr:\n%s", errOut)
	}
	if err := env.Client.List(ctx, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("Shims created while runtime-class-manager runs: %d %v", len(list.Items), err)
	}
	rcm.Spec.Replicas = ptr.To[int32](0) // helm uninstall deletes it; scaled to 0 is stopped too
	if err := env.Client.Update(ctx, rcm); err != nil {
		t.Fatal(err)
	}

	// --apply creates them as printed (the API server admits them).
	code, out, errOut = run(t, kubeconfig, "--apply")
	if code != 1 || strings.Count(out, " created (from ") != 3 {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for name, want := range printed {
		got := &v1alpha1.Shim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("Shim %s created as\n%#v\nwant\n%#v", name, got.Spec, want.Spec)
		}
		if !managedBy(got, migrate.FieldOwner) {
			t.Errorf("Shim %s: managedFields lack %s", name, migrate.FieldOwner)
		}
	}
	// Again: the same specs are left as they are (and the same Shims are
	// skipped).
	code, out, errOut = run(t, kubeconfig, "--apply")
	if code != 1 || strings.Count(out, " unchanged ") != 3 {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, kubeconfig, "--apply", "wasmtime-v1", "wasmtime")
	if code != 0 || strings.Count(out, " unchanged ") != 2 || errOut != "" {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// One that differs is refused, and left as it is.
	s := &v1alpha1.Shim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime"}, s); err != nil {
		t.Fatal(err)
	}
	s.Spec.MigrateFrom = nil
	s.Spec.NodeSelector = map[string]string{"pool": "wasm"}
	if err := env.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, kubeconfig, "--apply", "wasmtime")
	if code != 1 || !strings.Contains(errOut, "refused runtime.spinkube.dev/v1alpha1 Shim wasmtime: shim.containerd.x-k8s.io/wasmtime exists with another spec (spec.migrateFrom, spec.nodeSelector differ)") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime"}, s); err != nil || s.Spec.MigrateFrom != nil {
		t.Errorf("the differing Shim was changed: %+v %v", s.Spec.MigrateFrom, err)
	}
	// A name that is not there.
	if code, _, errOut := run(t, kubeconfig, "nothere"); code != 1 || !strings.Contains(errOut, "skipped Shim nothere: no runtime-class-manager Shim of that name") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "nothere"}, &v1alpha1.Shim{}); !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

// TestUsage: --help prints the usage and exits 0; a bad flag exits 2.
func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := migrate.Run(context.Background(), []string{"--help"}, os.Getenv, &out, &errOut); code != 0 || !strings.HasPrefix(errOut.String(), migrate.Usage) || !strings.Contains(errOut.String(), "-apply") {
		t.Errorf("--help: %d\n%s", code, errOut.String())
	}
	if code := migrate.Run(context.Background(), []string{"--bogus"}, os.Getenv, &out, &errOut); code != 2 {
		t.Errorf("--bogus: %d", code)
	}
}

// rcmDeployment creates runtime-class-manager's operator Deployment as
// its Helm chart does (the env that tells it apart).
func rcmDeployment(t *testing.T, c client.Client) *appsv1.Deployment {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rcm"}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": "runtime-class-manager"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "runtime-class-manager", Namespace: "rcm"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "runtime-class-manager", Image: "ghcr.io/spinframework/runtime-class-manager:v0.2.0",
					Env: []corev1.EnvVar{
						{Name: "CONTROLLER_NAMESPACE", Value: "rcm"},
						{Name: "SHIM_NODE_INSTALLER_IMAGE", Value: "ghcr.io/spinframework/node-installer:v0.2.0"},
					},
				}}},
			},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func managedBy(s *v1alpha1.Shim, manager string) bool {
	for _, m := range s.ManagedFields {
		if m.Manager == manager {
			return true
		}
	}
	return false
}
