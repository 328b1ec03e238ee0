package runtime

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
)

// CheckPlans validates the plans of one operation: install plans of
// different Shims, with different handlers, for the same runtime. It
// returns the Shims' names and their resolved handlers.
func CheckPlans(l layout.Layout, plans []*plan.NodePlan) ([]string, [][]containerdconfig.RuntimeHandler, error) {
	if len(plans) == 0 {
		return nil, nil, fmt.Errorf("%w: no plan", plan.ErrInvalid)
	}
	var names []string
	var handlers [][]containerdconfig.RuntimeHandler
	owner := map[string]string{} // handler → Shim
	for _, p := range plans {
		if err := p.Validate(); err != nil {
			return nil, nil, err
		}
		name := p.Shim.Name
		if p.Operation != plan.OpInstall {
			return nil, nil, fmt.Errorf("%w: operation %q of Shim %s given to Install", plan.ErrInvalid, p.Operation, name)
		}
		if slices.Contains(names, name) {
			return nil, nil, fmt.Errorf("%w: Shim %s has two plans in one operation", plan.ErrInvalid, name)
		}
		if !reflect.DeepEqual(p.Restart, plans[0].Restart) {
			return nil, nil, fmt.Errorf("%w: Shim %s: restart settings differ from Shim %s's in one operation", plan.ErrInvalid, name, names[0])
		}
		if p.Runtime != plans[0].Runtime {
			return nil, nil, fmt.Errorf("%w: Shim %s: runtime %q differs from Shim %s's %q in one operation", plan.ErrInvalid, name, p.Runtime, names[0], plans[0].Runtime)
		}
		hs, err := resolveHandlers(l, p)
		if err != nil {
			return nil, nil, err
		}
		for _, h := range hs {
			if other, ok := owner[h.Name]; ok {
				return nil, nil, fmt.Errorf("%w: handler %s is in the plans of Shims %s and %s", plan.ErrInvalid, h.Name, other, name)
			}
			owner[h.Name] = name
		}
		names = append(names, name)
		handlers = append(handlers, hs)
	}
	return names, handlers, nil
}

// resolveHandlers converts the plan's handlers, with the bundle
// placeholder resolved.
func resolveHandlers(l layout.Layout, p *plan.NodePlan) ([]containerdconfig.RuntimeHandler, error) {
	var out []containerdconfig.RuntimeHandler
	for _, h := range p.Handlers {
		rh, err := Handler(h, l.CurrentDir(p.Shim.Name))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", plan.ErrInvalid, err)
		}
		out = append(out, rh)
	}
	return out, nil
}

// Handler turns a plan's handler into containerd's, with the bundle
// placeholder resolved to dir in every string.
func Handler(h plan.Handler, dir string) (containerdconfig.RuntimeHandler, error) {
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

// PlanEdit completes e (its owner, Locate and Journal) with what an
// install plan asks of the config: its handlers (hs, resolved) and their
// adoption, its sandboxers and migration, and the removal of the handlers
// and proxy plugins the Shim had (prevHandlers, prevProxies) that the
// plan no longer has.
func PlanEdit(e ConfigEdit, p *plan.NodePlan, hs []containerdconfig.RuntimeHandler, prevHandlers, prevProxies []string) ConfigEdit {
	var names, proxies []string
	for k, h := range hs {
		e.Handlers = append(e.Handlers, h)
		e.Adopt = append(e.Adopt, p.Handlers[k].Adopt)
		names = append(names, h.Name)
	}
	e.Sandboxers, e.Migrate = p.Sandboxers, p.Migrate
	for _, sb := range p.Sandboxers {
		proxies = append(proxies, sb.Name)
	}
	for _, h := range prevHandlers {
		if !slices.Contains(names, h) {
			e.Remove = append(e.Remove, h)
		}
	}
	for _, pp := range prevProxies {
		if !slices.Contains(proxies, pp) {
			e.RemoveProxyPlugins = append(e.RemoveProxyPlugins, pp)
		}
	}
	return e
}
