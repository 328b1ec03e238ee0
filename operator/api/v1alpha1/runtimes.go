package v1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// Runtimes are the container runtimes the Shim's handlers run on:
// containerRuntimes, or by default containerd, and cri-o too when every
// handler is an OCI runtime run through containerd's runc shim (a runtime
// type of ReservedRuntimeTypes with runtimeOptions.BinaryName: an oci
// handler on CRI-O) and the Shim asks CRI-O for nothing it lacks
// (CRIOUnsupported). A containerd shim v2 runs on CRI-O only as a vm
// handler, and only where its maker says so: the Shim lists cri-o then.
func (s *ShimSpec) Runtimes() []string {
	switch {
	case len(s.ContainerRuntimes) > 0:
		return s.ContainerRuntimes
	case s.ociHandlers() && s.CRIOUnsupported() == nil:
		return []string{RuntimeContainerd, RuntimeCRIO}
	}
	return []string{RuntimeContainerd}
}

// SupportsRuntime reports whether runtime is one of Runtimes (without
// building the list: every node's eligibility asks).
func (s *ShimSpec) SupportsRuntime(runtime string) bool {
	switch {
	case len(s.ContainerRuntimes) > 0:
		return slices.Contains(s.ContainerRuntimes, runtime)
	case runtime == RuntimeContainerd:
		return true
	}
	return runtime == RuntimeCRIO && s.ociHandlers() && s.CRIOUnsupported() == nil
}

// ociHandlers: every handler is an OCI runtime run through containerd's
// runc shim.
func (s *ShimSpec) ociHandlers() bool {
	for _, h := range s.HandlerSpecs() {
		if !ociRuntime(h.RuntimeType, rawOf(h.RuntimeOptions)) {
			return false
		}
	}
	return true
}

// HandlerSpecs lists the primary handler (spec.runtimeClass with the
// top-level runtime fields), then spec.handlers.
func (s *ShimSpec) HandlerSpecs() []HandlerSpec {
	primary := HandlerSpec{
		RuntimeClass: s.RuntimeClass, RuntimeType: s.RuntimeType, RuntimeOptions: s.RuntimeOptions, RuntimePath: s.RuntimePath,
		PodAnnotations: s.PodAnnotations, ContainerAnnotations: s.ContainerAnnotations,
		PrivilegedWithoutHostDevices: s.PrivilegedWithoutHostDevices, Snapshotter: s.Snapshotter, Sandboxer: s.Sandboxer, IOType: s.IOType,
	}
	return append([]HandlerSpec{primary}, s.Handlers...)
}

// ociRuntime: the handler runs an OCI runtime through containerd's runc
// shim (a reserved runtime type with BinaryName).
func ociRuntime(runtimeType string, rawOptions []byte) bool {
	if !IsReservedRuntimeType(runtimeType) || len(rawOptions) == 0 {
		return false
	}
	var opts map[string]any
	if json.Unmarshal(rawOptions, &opts) != nil {
		return false
	}
	name, _ := opts[BinaryNameOption].(string)
	return name != ""
}

func rawOf(r *runtime.RawExtension) []byte {
	if r == nil {
		return nil
	}
	return r.Raw
}

// crioOptions are the runtimeOptions keys a handler may have on CRI-O:
// the OCI runtime's binary and root (an oci handler), a vm handler's
// config file, and the cgroup driver (node-wide on CRI-O, so ignored).
var crioOptions = []string{BinaryNameOption, "Root", "ConfigPath", "SystemdCgroup"}

// CRIOUnsupported names the first field the Shim sets that CRI-O has no
// setting for (nil: none): sandboxers (containerd proxy plugins),
// migrateFrom (runtime-class-manager installs into containerd alone),
// and per handler adoptHandler (a later drop-in replaces a CRI-O handler
// whole), snapshotter, sandboxer, ioType, containerd's pod and container
// annotations, and runtimeOptions other than crioOptions.
func (s *ShimSpec) CRIOUnsupported() error {
	switch {
	case len(s.Sandboxers) > 0:
		return fmt.Errorf("spec.sandboxers: containerd proxy plugins, which CRI-O has not")
	case s.MigrateFrom != nil:
		return fmt.Errorf("spec.migrateFrom: runtime-class-manager installs into containerd alone")
	}
	for i, h := range s.HandlerSpecs() {
		field := "spec"
		if i > 0 {
			field = fmt.Sprintf("spec.handlers[%d]", i-1)
		}
		if err := crioHandlerUnsupported(h, field); err != nil {
			return err
		}
	}
	return nil
}

func crioHandlerUnsupported(h HandlerSpec, field string) error {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"runtimeClass.adoptHandler", h.RuntimeClass.AdoptHandler}, {"snapshotter", h.Snapshotter != ""}, {"sandboxer", h.Sandboxer != ""},
		{"ioType", h.IOType != ""}, {"podAnnotations", len(h.PodAnnotations) > 0}, {"containerAnnotations", len(h.ContainerAnnotations) > 0},
	} {
		if f.set {
			return fmt.Errorf("%s.%s: containerd's, CRI-O has no such setting", field, f.name)
		}
	}
	var opts map[string]any
	if raw := rawOf(h.RuntimeOptions); len(raw) > 0 {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return fmt.Errorf("%s.runtimeOptions: %w", field, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if !slices.Contains(crioOptions, k) {
			return fmt.Errorf("%s.runtimeOptions.%s: CRI-O has no such setting (a handler there takes %s)", field, k, strings.Join(crioOptions, ", "))
		}
	}
	return nil
}
