package shimspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
)

// handlersOf lists the plan's handlers, in the order of ShimSpec.HandlerSpecs.
func handlersOf(shim *v1alpha1.Shim) ([]plan.Handler, error) {
	specs := shim.Spec.HandlerSpecs()
	out := make([]plan.Handler, 0, len(specs))
	for i, h := range specs {
		opts, err := options(h.RuntimeOptions)
		if err != nil {
			field := "spec.runtimeOptions"
			if i > 0 {
				field = fmt.Sprintf("spec.handlers[%d].runtimeOptions", i-1)
			}
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		out = append(out, plan.Handler{
			Name: h.RuntimeClass.HandlerName(), RuntimeType: HandlerRuntimeType(h), RuntimePath: h.RuntimePath, Options: opts,
			PodAnnotations: h.PodAnnotations, ContainerAnnotations: h.ContainerAnnotations,
			PrivilegedWithoutHostDevices: h.PrivilegedWithoutHostDevices, Snapshotter: h.Snapshotter, Sandboxer: h.Sandboxer, IOType: h.IOType,
			Adopt: h.RuntimeClass.AdoptHandler,
		})
	}
	return out, nil
}

func HandlerRuntimeType(h v1alpha1.HandlerSpec) string {
	if h.RuntimeType != "" {
		return h.RuntimeType
	}
	return "io.containerd." + h.RuntimeClass.HandlerName() + ".v2"
}

// binaryName is the shim binary containerd looks for a runtime type:
// io.containerd.runsc.v1 → containerd-shim-runsc-v1.
func binaryName(runtimeType string) string {
	parts := strings.Split(runtimeType, ".")
	if len(parts) < 4 || parts[0] != "io" || parts[1] != "containerd" {
		return ""
	}
	return "containerd-shim-" + strings.Join(parts[2:len(parts)-1], ".") + "-" + parts[len(parts)-1]
}

// filesOf lists the bundle's files, with their defaults.
func filesOf(shim *v1alpha1.Shim, handlers []plan.Handler) []plan.File {
	if len(shim.Spec.Files) == 0 {
		return []plan.File{{Source: "containerd-shim-*", Path: binaryName(handlers[0].RuntimeType), Mode: 0o755}}
	}
	shimBinaries := map[string]bool{}
	for _, h := range handlers {
		shimBinaries[binaryName(h.RuntimeType)] = true
	}
	out := make([]plan.File, 0, len(shim.Spec.Files))
	for _, f := range shim.Spec.Files {
		pf := plan.File{Source: f.Path, Path: fileTarget(f), Mode: 0o644, Substitute: f.Substitute}
		if f.Content != nil {
			content := *f.Content
			pf.Source, pf.Content = "", &content
		}
		if shimBinaries[pf.Path] {
			pf.Mode = 0o755
		}
		if f.Mode != nil {
			pf.Mode = uint32(*f.Mode)
		}
		out = append(out, pf)
	}
	return out
}

// fileTarget is where a file goes: Target, or its path (the base name
// when the path is a pattern).
func fileTarget(f v1alpha1.BundleFile) string {
	switch {
	case f.Target != "":
		return f.Target
	case strings.ContainsAny(f.Path, "*?["):
		return path.Base(f.Path)
	}
	return f.Path
}

func hasFile(files []plan.File, Target string) bool {
	for _, f := range files {
		if f.Path == Target {
			return true
		}
	}
	return false
}

func sandboxersOf(shim *v1alpha1.Shim) []plan.Sandboxer {
	var out []plan.Sandboxer
	for _, s := range shim.Spec.Sandboxers {
		addr := s.Address
		if addr == "" {
			addr = sandboxerSocketDir + "/" + s.Name + ".sock"
		}
		cmd := make([]string, len(s.Command))
		for i, a := range s.Command {
			cmd[i] = strings.ReplaceAll(a, addressPlaceholder, addr)
		}
		out = append(out, plan.Sandboxer{Name: s.Name, Unit: "shimkit-" + s.Name + ".service", Command: cmd, Environment: s.Env, Address: addr})
	}
	return out
}

// options decodes runtimeOptions as plan.Decode does: whole numbers as
// int64, other numbers as float64.
func options(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return typedValue(m).(map[string]any), nil
}

func typedValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil && !math.IsInf(f, 0) {
			return f
		}
		return v.String()
	case map[string]any:
		for k, e := range v {
			v[k] = typedValue(e)
		}
	case []any:
		for i, e := range v {
			v[i] = typedValue(e)
		}
	}
	return v
}
