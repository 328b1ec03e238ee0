package installer

import (
	"fmt"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// runtimeHandler turns a plan's handler into containerd's, with the bundle
// placeholder resolved to dir in every string.
func runtimeHandler(h plan.Handler, dir string) (containerdconfig.RuntimeHandler, error) {
	res := func(s string) string { return plan.ResolveBundleDir(s, dir) }
	out := containerdconfig.RuntimeHandler{
		Name:                         h.Name,
		RuntimeType:                  res(h.RuntimeType),
		RuntimePath:                  res(h.RuntimePath),
		Options:                      resolveMap(h.Options, dir),
		PodAnnotations:               h.PodAnnotations,
		ContainerAnnotations:         h.ContainerAnnotations,
		PrivilegedWithoutHostDevices: h.PrivilegedWithoutHostDevices,
		Snapshotter:                  h.Snapshotter,
		Sandboxer:                    h.Sandboxer,
		IOType:                       h.IOType,
		Settings:                     resolveMap(h.Settings, dir),
	}
	if err := out.Validate(); err != nil {
		return out, fmt.Errorf("handler %s: %w", h.Name, err)
	}
	return out, nil
}

func resolveMap(m map[string]any, dir string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = resolveValue(v, dir)
	}
	return out
}

func resolveValue(v any, dir string) any {
	switch v := v.(type) {
	case string:
		return plan.ResolveBundleDir(v, dir)
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = plan.ResolveBundleDir(s, dir)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = resolveValue(e, dir)
		}
		return out
	case map[string]any:
		return resolveMap(v, dir)
	}
	return v
}
