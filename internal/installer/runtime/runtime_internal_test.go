package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// TestCRIOHandler: a plan's handler, in containerd's terms, becomes CRI-O's:
// an OCI runtime under containerd's runc shim (options.BinaryName) an oci
// handler of that binary, a shim v2 a vm handler of its runtimePath, CRI-O's
// own settings carried; what CRI-O has no setting for is refused, naming
// the field.
func TestCRIOHandler(t *testing.T) {
	const bundle = "/opt/shimkit/x/current"
	for _, tt := range []struct {
		name string
		in   containerdconfig.RuntimeHandler
		want crioconfig.RuntimeHandler
		err  error
	}{
		{name: "OCI runtime under runc's shim",
			in: containerdconfig.RuntimeHandler{Name: "crun-wasm", RuntimeType: "io.containerd.runc.v2",
				Options:  map[string]any{"BinaryName": bundle + "/crun", "SystemdCgroup": true, "Root": "/run/crun-wasm"},
				Settings: map[string]any{"allowed_annotations": []any{"module.wasm.image/variant"}, "container_min_memory": "4MiB"}},
			want: crioconfig.RuntimeHandler{Name: "crun-wasm", Kind: crioconfig.KindOCI, RuntimePath: bundle + "/crun", RuntimeRoot: "/run/crun-wasm",
				AllowedAnnotations: []string{"module.wasm.image/variant"}, ContainerMinMemory: "4MiB"}},
		{name: "shim v2 with its config",
			in: containerdconfig.RuntimeHandler{Name: "kata", RuntimeType: "io.containerd.kata.v2", RuntimePath: bundle + "/containerd-shim-kata-v2",
				Options: map[string]any{"ConfigPath": bundle + "/configuration.toml"}, PrivilegedWithoutHostDevices: true},
			want: crioconfig.RuntimeHandler{Name: "kata", Kind: crioconfig.KindVM, RuntimePath: bundle + "/containerd-shim-kata-v2",
				RuntimeConfigPath: bundle + "/configuration.toml", PrivilegedWithoutHostDevices: true}},
		{name: "shim v2 with its FIFOs' root",
			in: containerdconfig.RuntimeHandler{Name: "kata", RuntimeType: "io.containerd.kata.v2", RuntimePath: bundle + "/containerd-shim-kata-v2",
				Options: map[string]any{"Root": "/run/vc"}},
			want: crioconfig.RuntimeHandler{Name: "kata", Kind: crioconfig.KindVM, RuntimePath: bundle + "/containerd-shim-kata-v2", RuntimeRoot: "/run/vc"}},
		{name: "shim v2 found on PATH only",
			in:  containerdconfig.RuntimeHandler{Name: "spin", RuntimeType: "io.containerd.spin.v2"},
			err: ErrRuntimeUnsupported},
		{name: "runc's shim without a binary of its own",
			in:  containerdconfig.RuntimeHandler{Name: "myrunc", RuntimeType: "io.containerd.runc.v2"},
			err: ownership.ErrReserved},
		{name: "containerd's snapshotter",
			in:  containerdconfig.RuntimeHandler{Name: "kata", RuntimeType: "io.containerd.kata.v2", RuntimePath: bundle + "/containerd-shim-kata-v2", Snapshotter: "devmapper"},
			err: ErrRuntimeUnsupported},
		{name: "an option CRI-O does not have",
			in:  containerdconfig.RuntimeHandler{Name: "gvisor", RuntimeType: "io.containerd.runsc.v1", RuntimePath: bundle + "/containerd-shim-runsc-v1", Options: map[string]any{"TypeUrl": "x"}},
			err: ErrRuntimeUnsupported},
		{name: "a setting CRI-O does not have",
			in:  containerdconfig.RuntimeHandler{Name: "c", RuntimeType: "io.containerd.runc.v2", Options: map[string]any{"BinaryName": bundle + "/crun"}, Settings: map[string]any{"cni_conf_dir": "/x"}},
			err: ErrRuntimeUnsupported},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := crioHandler(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("crioHandler = %+v, %v; want %v", got, err, tt.err)
				}
				return
			}
			if err != nil || !equalHandlers(got, tt.want) {
				t.Fatalf("crioHandler = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func equalHandlers(a, b crioconfig.RuntimeHandler) bool {
	return slices.Equal(a.AllowedAnnotations, b.AllowedAnnotations) &&
		string(crioconfig.Render("o", a)) == string(crioconfig.Render("o", b))
}

// TestDetectRuntime: which runtime a node without a plan's word gets.
func TestDetectRuntime(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files []string
		want  string
		err   error
	}{
		{name: "nothing: containerd", want: plan.RuntimeContainerd},
		{name: "containerd's config", files: []string{"/etc/containerd/config.toml"}, want: plan.RuntimeContainerd},
		{name: "CRI-O's drop-in directory", files: []string{"/etc/crio/crio.conf.d/"}, want: plan.RuntimeCRIO},
		{name: "CRI-O's socket", files: []string{"/var/run/crio/crio.sock"}, want: plan.RuntimeCRIO},
		{name: "CRI-O's socket through /run", files: []string{"/run/crio/crio.sock"}, want: plan.RuntimeCRIO},
		{name: "CRI-O's policies only (Debian's containers-common)", files: []string{"/etc/crio/policies/"}, want: plan.RuntimeContainerd},
		{name: "k3s beside CRI-O's files", files: []string{"/var/lib/rancher/k3s/agent/etc/containerd/", "/etc/crio/crio.conf"}, want: plan.RuntimeContainerd},
		{name: "CRI-O running, containerd's config left", files: []string{"/etc/containerd/config.toml", "/etc/crio/crio.conf", "/run/crio/crio.sock"}, want: plan.RuntimeCRIO},
		{name: "containerd running, CRI-O's config left", files: []string{"/run/containerd/containerd.sock", "/etc/crio/crio.conf"}, want: plan.RuntimeContainerd},
		{name: "both running", files: []string{"/run/containerd/containerd.sock", "/var/run/crio/crio.sock"}, err: ErrAmbiguousRuntime},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tt.files {
				p := filepath.Join(root, f)
				dir := filepath.Dir(p)
				if strings.HasSuffix(f, "/") {
					dir = p
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if dir == p {
					continue
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := detect(layout.Layout{Host: root})
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("detect = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
