package crioconfig

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/golden"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestValidate pins what CRI-O v1.34 drops a handler for (pkg/config
// RuntimeHandler.Validate: ValidateRuntimeType, ValidateRuntimePath with
// RuntimeTypeVMBinaryPattern, ValidateRuntimeConfigPath,
// ValidateRuntimeAllowedAnnotations; ValidateContainerMinMemory parses
// with go-units' RAMInBytes), plus what shimkit asks for beyond it.
func TestValidate(t *testing.T) {
	oci := RuntimeHandler{Name: "crun-wasm", Kind: KindOCI, RuntimePath: "/opt/shimkit/bin/crun"}
	vm := RuntimeHandler{Name: "kata", Kind: KindVM, RuntimePath: "/opt/kata/bin/containerd-shim-kata-v2"}
	with := func(h RuntimeHandler, f func(*RuntimeHandler)) RuntimeHandler { f(&h); return h }
	cases := []struct {
		name string
		h    RuntimeHandler
		want string // substring of the error; "" = valid
	}{
		{"oci", oci, ""},
		{"vm", vm, ""},
		{"oci with root, annotations, memory", with(oci, func(h *RuntimeHandler) {
			h.RuntimeRoot = "/run/crun-wasm"
			h.AllowedAnnotations = []string{"module.wasm.image/variant", "run.oci."}
			h.ContainerMinMemory = "500KiB"
			h.PrivilegedWithoutHostDevices = true
		}), ""},
		{"vm with config", with(vm, func(h *RuntimeHandler) { h.RuntimeConfigPath = "/etc/kata/configuration.toml" }), ""},
		{"vm plus in name", with(vm, func(h *RuntimeHandler) { h.RuntimePath = "/bin/containerd-shim-a+b-v2" }), ""},
		{"name not a label", with(oci, func(h *RuntimeHandler) { h.Name = "Crun_Wasm" }), `name:`},
		{"empty name", with(oci, func(h *RuntimeHandler) { h.Name = "" }), `name:`},
		{"runtime_type pod", with(oci, func(h *RuntimeHandler) { h.Kind = "pod" }), `runtime_type "pod"`},
		{"runtime_type empty", with(oci, func(h *RuntimeHandler) { h.Kind = "" }), `runtime_type ""`},
		{"no runtime_path", with(oci, func(h *RuntimeHandler) { h.RuntimePath = "" }), `runtime_path "": must be set`},
		{"relative runtime_path", with(oci, func(h *RuntimeHandler) { h.RuntimePath = "bin/crun" }), `clean absolute`},
		{"unclean runtime_path", with(oci, func(h *RuntimeHandler) { h.RuntimePath = "/opt/../bin/crun" }), `clean absolute`},
		{"newline in runtime_root", with(oci, func(h *RuntimeHandler) { h.RuntimeRoot = "/run/a\nb" }), `control character`},
		// CRI-O: "runtime_config_path can only be used with the 'vm' runtime type".
		{"oci with runtime_config_path", with(oci, func(h *RuntimeHandler) { h.RuntimeConfigPath = "/etc/x.toml" }), `runtime_config_path is only for`},
		{"vm with a relative runtime_root", with(vm, func(h *RuntimeHandler) { h.RuntimeRoot = "run/vc" }), `runtime_root "run/vc"`},
		// CRI-O: "containerd binary naming pattern is not followed".
		{"vm binary misnamed", with(vm, func(h *RuntimeHandler) { h.RuntimePath = "/opt/kata/bin/kata-runtime" }), `containerd-shim-<name>-v2`},
		{"vm binary v1", with(vm, func(h *RuntimeHandler) { h.RuntimePath = "/bin/containerd-shim-runsc-v1" }), `containerd-shim-<name>-v2`},
		// CRI-O's pattern is unanchored and would take this name; shimkit does not.
		{"vm binary with suffix", with(vm, func(h *RuntimeHandler) { h.RuntimePath = "/bin/containerd-shim-kata-v2.old" }), `containerd-shim-<name>-v2`},
		{"vm binary no name", with(vm, func(h *RuntimeHandler) { h.RuntimePath = "/bin/containerd-shim--v2" }), `containerd-shim-<name>-v2`},
		// CRI-O: "invalid allowed_annotation".
		{"unknown annotation", with(oci, func(h *RuntimeHandler) { h.AllowedAnnotations = []string{"io.kubernetes.cri-o.Unknown"} }), `allowed_annotations: "io.kubernetes.cri-o.Unknown"`},
		{"annotation prefix only as listed", with(oci, func(h *RuntimeHandler) { h.AllowedAnnotations = []string{"run.oci.foo"} }), `allowed_annotations`},
		{"bad min memory", with(oci, func(h *RuntimeHandler) { h.ContainerMinMemory = "12 apples" }), `container_min_memory "12 apples"`},
		{"negative min memory", with(oci, func(h *RuntimeHandler) { h.ContainerMinMemory = "-1MiB" }), `container_min_memory`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.h.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidHandler) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want ErrInvalidHandler with %q", err, c.want)
			}
			if Reason(err) != ReasonInvalidHandler {
				t.Errorf("Reason = %q", Reason(err))
			}
		})
	}
}

// TestRender pins the drop-ins shimkit writes (golden files), and that
// each decodes to exactly its handler.
func TestRender(t *testing.T) {
	cases := []struct {
		file string
		h    RuntimeHandler
	}{
		{"oci.conf", RuntimeHandler{Name: "crun-wasm", Kind: KindOCI, RuntimePath: "/opt/shimkit/crun-wasm/bin/crun", RuntimeRoot: "/run/crun-wasm",
			AllowedAnnotations: []string{"module.wasm.image/variant", "run.oci."}, ContainerMinMemory: "500KiB"}},
		{"oci-minimal.conf", RuntimeHandler{Name: "runsc", Kind: KindOCI, RuntimePath: "/usr/local/bin/runsc"}},
		{"vm.conf", RuntimeHandler{Name: "kata", Kind: KindVM, RuntimePath: "/opt/kata/bin/containerd-shim-kata-v2",
			RuntimeConfigPath: "/opt/kata/share/defaults/kata-containers/configuration.toml", PrivilegedWithoutHostDevices: true,
			AllowedAnnotations: []string{"io.kubernetes.cri-o.Devices"}}},
		{"quoted.conf", RuntimeHandler{Name: "odd", Kind: KindOCI, RuntimePath: `/opt/a "quoted" \dir/crun`}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			if err := c.h.Validate(); err != nil {
				t.Fatal(err)
			}
			got := Render("shim/spin", c.h)
			golden.Check(t, filepath.Join("testdata", c.file), got, *update)
			if err := verifyRendered(got, c.h); err != nil {
				t.Fatal(err)
			}
			src, err := parseSource("/etc/crio/crio.conf.d/"+DropInName(c.h.Name), got)
			if err != nil || len(src.Handlers) != 1 || src.Handlers[0] != c.h.Name {
				t.Fatalf("parseSource = %+v, %v", src.Handlers, err)
			}
		})
	}
}

func TestKnownAnnotationsIsACopy(t *testing.T) {
	a := KnownAnnotations()
	a[0] = "changed"
	if KnownAnnotations()[0] == "changed" {
		t.Fatal("KnownAnnotations returned the package's slice")
	}
}
