package shimspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func crioShim(change func(*v1alpha1.ShimSpec)) *v1alpha1.Shim {
	s := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "kata", UID: "uid-1"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
			Location: "https://artifacts.invalid/kata.tgz", SHA256: strings.Repeat("a", 64)}},
		RuntimeClass:      v1alpha1.RuntimeClassSpec{Name: "kata", Handler: "kata"},
		ContainerRuntimes: []string{v1alpha1.RuntimeContainerd, v1alpha1.RuntimeCRIO},
	}}
	change(&s.Spec)
	return s
}

// TestCheckCRIO: a Shim that lists cri-o is refused, naming the field,
// for what CRI-O has no setting for; a containerd-only Shim is not.
func TestCheckCRIO(t *testing.T) {
	opts := func(json string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(json)} }
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.ShimSpec)
		field  string // "": accepted
	}{
		{"a vm handler", func(*v1alpha1.ShimSpec) {}, ""},
		{"CRI-O's options", func(s *v1alpha1.ShimSpec) {
			s.RuntimeOptions = opts(`{"ConfigPath":"/opt/kata/configuration.toml","SystemdCgroup":true}`)
		}, ""},
		{"containerd's options", func(s *v1alpha1.ShimSpec) { s.RuntimeOptions = opts(`{"SandboxCgroupOnly":true}`) }, "spec.runtimeOptions.SandboxCgroupOnly"},
		{"sandboxers", func(s *v1alpha1.ShimSpec) { s.Sandboxers = []v1alpha1.SandboxerSpec{{Name: "x"}} }, "spec.sandboxers"},
		{"migrateFrom", func(s *v1alpha1.ShimSpec) {
			s.MigrateFrom = &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: "kata"}}
		}, "spec.migrateFrom"},
		{"pod annotations", func(s *v1alpha1.ShimSpec) { s.PodAnnotations = []string{"io.katacontainers.*"} }, "spec.podAnnotations"},
		{"a second handler's adopt", func(s *v1alpha1.ShimSpec) {
			s.Handlers = []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "kata-qemu", Handler: "kata-qemu", AdoptHandler: true}}}
		}, "spec.handlers[0].runtimeClass.adoptHandler"},
		{"not listed, an OCI runtime with containerd's annotations: containerd alone", func(s *v1alpha1.ShimSpec) {
			s.ContainerRuntimes, s.PodAnnotations = nil, []string{"run.oci.*"}
			s.RuntimeType, s.RuntimeOptions = "io.containerd.runc.v2", opts(`{"BinaryName":"/usr/bin/crun"}`)
		}, ""},
		{"containerd alone: anything goes", func(s *v1alpha1.ShimSpec) {
			s.ContainerRuntimes, s.PodAnnotations = []string{v1alpha1.RuntimeContainerd}, []string{"io.katacontainers.*"}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(crioShim(tc.change), Settings{})
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), "cri-o")):
				t.Errorf("%v, want a refusal naming %s and cri-o", err, tc.field)
			}
		})
	}
}

// TestPlanRuntime: a plan names the runtime the node's kubelet reports,
// so that the installer writes that runtime's config (a node with both
// runtimes is no guess); a runtime not reported yet is the installer's to
// detect.
func TestPlanRuntime(t *testing.T) {
	shim := crioShim(func(*v1alpha1.ShimSpec) {})
	for rt, want := range map[string]string{"containerd://2.1.4": plan.RuntimeContainerd, "cri-o://1.34.0": plan.RuntimeCRIO, "": ""} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: rt}}}
		for _, op := range []plan.Operation{plan.OpInstall, plan.OpUninstall} {
			p, err := BuildPlan(shim, node, op, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Runtime != want {
				t.Errorf("%s plan on %q: runtime %q, %v; want %q", op, rt, p.Runtime, err, want)
			}
		}
	}
}
