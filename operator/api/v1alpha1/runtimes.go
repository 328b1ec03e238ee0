package v1alpha1

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
)

// Runtimes are the container runtimes the Shim's handlers run on:
// containerRuntimes, or by default containerd, and cri-o too when every
// handler is an OCI runtime run through containerd's runc shim (a runtime
// type of ReservedRuntimeTypes with runtimeOptions.BinaryName: an oci
// handler on CRI-O). A containerd shim v2 runs on CRI-O only as a vm
// handler, and only where its maker says so: the Shim lists cri-o then.
func (s *ShimSpec) Runtimes() []string {
	switch {
	case len(s.ContainerRuntimes) > 0:
		return s.ContainerRuntimes
	case s.ociHandlers():
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
	return runtime == RuntimeCRIO && s.ociHandlers()
}

// ociHandlers: every handler is an OCI runtime run through containerd's
// runc shim.
func (s *ShimSpec) ociHandlers() bool {
	if !ociRuntime(s.RuntimeType, rawOf(s.RuntimeOptions)) {
		return false
	}
	for _, h := range s.Handlers {
		if !ociRuntime(h.RuntimeType, rawOf(h.RuntimeOptions)) {
			return false
		}
	}
	return true
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
