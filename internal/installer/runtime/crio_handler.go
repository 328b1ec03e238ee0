package runtime

import (
	"fmt"
	"maps"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// crioHandler turns a plan's handler (resolved, in containerd's terms)
// into a CRI-O one: an OCI runtime run under containerd's runc shim
// (options.BinaryName) is an oci handler of that binary; any other
// runtime type is a containerd shim v2, a vm handler of its runtimePath.
// settings may carry CRI-O's allowed_annotations and container_min_memory.
// What CRI-O has no setting for is refused, naming the field.
func crioHandler(h containerdconfig.RuntimeHandler) (crioconfig.RuntimeHandler, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: handler %s: "+format, append([]any{ErrRuntimeUnsupported, h.Name}, args...)...)
	}
	for field, set := range map[string]bool{"snapshotter": h.Snapshotter != "", "sandboxer": h.Sandboxer != "", "ioType": h.IOType != "",
		"podAnnotations": len(h.PodAnnotations) > 0, "containerAnnotations": len(h.ContainerAnnotations) > 0} {
		if set {
			return crioconfig.RuntimeHandler{}, bad("%s is containerd's; CRI-O has no such setting", field)
		}
	}
	out := crioconfig.RuntimeHandler{Name: h.Name, PrivilegedWithoutHostDevices: h.PrivilegedWithoutHostDevices}
	opts := maps.Clone(h.Options)
	delete(opts, "SystemdCgroup")              // CRI-O's cgroup manager is node-wide
	out.RuntimeRoot, _ = opts["Root"].(string) // a vm handler's FIFOs' root; crioconfig.VMRuntimeRoot when unset
	delete(opts, "Root")
	if slices.Contains(containerdRuntimeTypes, h.RuntimeType) {
		out.Kind = crioconfig.KindOCI
		out.RuntimePath, _ = opts["BinaryName"].(string)
		if out.RuntimePath == "" {
			return out, fmt.Errorf("%w: handler %q: runtime type %s without options.BinaryName is the node's own runtime", ownership.ErrReserved, h.Name, h.RuntimeType)
		}
		delete(opts, "BinaryName")
	} else {
		out.Kind, out.RuntimePath = crioconfig.KindVM, h.RuntimePath
		out.RuntimeConfigPath, _ = opts["ConfigPath"].(string)
		delete(opts, "ConfigPath")
		if out.RuntimePath == "" {
			return out, bad("runtimePath: CRI-O needs the shim binary's path (containerd-shim-<name>-v2); shimkit does not rely on PATH")
		}
	}
	if len(opts) > 0 {
		return out, bad("options %v: CRI-O has no such setting", slices.Sorted(maps.Keys(opts)))
	}
	return out, crioSettings(&out, h.Settings, bad)
}

// crioSettings reads CRI-O's own keys of a handler's settings.
func crioSettings(out *crioconfig.RuntimeHandler, settings map[string]any, bad func(string, ...any) error) error {
	for k, v := range settings {
		switch k {
		case "allowed_annotations":
			l, ok := stringList(v)
			if !ok {
				return bad("settings.allowed_annotations: want a list of strings")
			}
			out.AllowedAnnotations = l
		case "container_min_memory":
			s, ok := v.(string)
			if !ok {
				return bad("settings.container_min_memory: want a string such as \"12MiB\"")
			}
			out.ContainerMinMemory = s
		default:
			return bad("settings.%s: CRI-O handlers take allowed_annotations and container_min_memory", k)
		}
	}
	return nil
}

// stringList reads a list of strings as a plan decodes it ([]any) or as
// Go code writes it ([]string).
func stringList(v any) ([]string, bool) {
	if l, ok := v.([]string); ok {
		return l, true
	}
	l, ok := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, isStr := e.(string)
		if !isStr {
			return nil, false
		}
		out = append(out, s)
	}
	return out, ok
}
