package containerdconfig

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// RuntimeHandler describes one containerd runtime handler: the name a
// RuntimeClass's handler refers to and the shim containerd starts for it.
type RuntimeHandler struct {
	// Name is the handler name; it must equal the RuntimeClass handler, so
	// it must be an RFC 1123 DNS label.
	Name string
	// RuntimeType is io.containerd.<shim>.<version>; containerd resolves it
	// to the binary containerd-shim-<shim>-<version>.
	RuntimeType string
	// RuntimePath, when set, is the absolute path of the shim binary.
	RuntimePath string
	// Options is the handler's options table. Values must be TOML-typed:
	// string, bool, int, int64, float64, []string, []any of those, or a
	// nested map[string]any.
	Options map[string]any
	// PodAnnotations and ContainerAnnotations are the annotation keys (or
	// prefixes ending in *) passed through to the shim.
	PodAnnotations       []string
	ContainerAnnotations []string
	// PrivilegedWithoutHostDevices keeps host devices out of privileged
	// containers of this handler.
	PrivilegedWithoutHostDevices bool
	// Snapshotter, when set, is the snapshotter for this handler's containers.
	Snapshotter string
	// Sandboxer, when set, is the sandbox controller of this handler's pods
	// (containerd 2.x): "podsandbox" (the default), "shim", or the name of
	// a proxy plugin of type "sandbox" (see ProxyPlugin), such as a Kuasar
	// or runwasi sandboxer daemon.
	Sandboxer string
	// IOType, when set, is how containerd 2.x carries container IO:
	// "fifo" (the default) or "streaming" (through the sandbox's streaming
	// API).
	IOType string
	// Settings are further keys of the handler's table that containerd
	// knows (base_runtime_spec, cni_conf_dir, ...), typed like Options.
	// They may not repeat the fields above.
	Settings map[string]any
}

// fixedKeys are the handler table keys RuntimeHandler has fields for.
var fixedKeys = []string{"runtime_type", "runtime_path", "pod_annotations", "container_annotations", "privileged_without_host_devices", "snapshotter", "sandboxer", "io_type", "options"}

// ioTypes are the io_type values containerd 2.x accepts.
var ioTypes = []string{"fifo", "streaming"}

var runtimeTypeRE = regexp.MustCompile(`^io\.containerd\.([a-z0-9][a-z0-9_-]*)\.(v[0-9]+)$`)

// Validate checks the handler and names the offending field.
func (h RuntimeHandler) Validate() error {
	if errs := validation.IsDNS1123Label(h.Name); len(errs) > 0 {
		return fmt.Errorf("%w: name %q: %s", ErrInvalidHandler, h.Name, strings.Join(errs, "; "))
	}
	if !runtimeTypeRE.MatchString(h.RuntimeType) {
		return fmt.Errorf("%w: handler %s: runtime_type %q is not io.containerd.<name>.<version> (for example io.containerd.spin.v2)",
			ErrInvalidHandler, h.Name, h.RuntimeType)
	}
	if h.RuntimePath != "" && (!path.IsAbs(h.RuntimePath) || path.Clean(h.RuntimePath) != h.RuntimePath) {
		return fmt.Errorf("%w: handler %s: runtime_path %q must be a clean absolute path", ErrInvalidHandler, h.Name, h.RuntimePath)
	}
	for _, a := range append(slices.Clone(h.PodAnnotations), h.ContainerAnnotations...) {
		if a == "" || strings.ContainsAny(a, " \t\r\n") {
			return fmt.Errorf("%w: handler %s: annotation %q is empty or contains whitespace", ErrInvalidHandler, h.Name, a)
		}
	}
	if h.Sandboxer != "" {
		if errs := validation.IsDNS1123Label(h.Sandboxer); len(errs) > 0 {
			return fmt.Errorf("%w: handler %s: sandboxer %q is not a sandbox controller name: %s", ErrInvalidHandler, h.Name, h.Sandboxer, strings.Join(errs, "; "))
		}
	}
	if h.IOType != "" && !slices.Contains(ioTypes, h.IOType) {
		return fmt.Errorf("%w: handler %s: io_type %q is not one of %s", ErrInvalidHandler, h.Name, h.IOType, strings.Join(ioTypes, ", "))
	}
	for k := range h.Settings {
		if slices.Contains(fixedKeys, k) {
			return fmt.Errorf("%w: handler %s: settings.%s repeats a field of RuntimeHandler", ErrInvalidHandler, h.Name, k)
		}
	}
	if err := validateOptions("settings", h.Settings); err != nil {
		return fmt.Errorf("%w: handler %s: %w", ErrInvalidHandler, h.Name, err)
	}
	if err := validateOptions("options", h.Options); err != nil {
		return fmt.Errorf("%w: handler %s: %w", ErrInvalidHandler, h.Name, err)
	}
	return nil
}

// BinaryName returns the shim binary containerd looks for when RuntimePath
// is empty: containerd-shim-<name>-<version>.
func (h RuntimeHandler) BinaryName() string {
	m := runtimeTypeRE.FindStringSubmatch(h.RuntimeType)
	if m == nil {
		return ""
	}
	return "containerd-shim-" + m[1] + "-" + m[2]
}

func validateOptions(field string, opts map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if k == "" {
			return fmt.Errorf("%s: empty key", field)
		}
		if err := validateValue(field+"."+k, opts[k]); err != nil {
			return err
		}
	}
	return nil
}

func validateValue(field string, v any) error {
	switch v := v.(type) {
	case string, bool, int, int32, int64, uint32, float64:
		return nil
	case []string:
		return nil
	case []any:
		for i, e := range v {
			if _, ok := e.(map[string]any); ok {
				return fmt.Errorf("%s[%d]: arrays of tables are not supported", field, i)
			}
			if err := validateValue(fmt.Sprintf("%s[%d]", field, i), e); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		return validateOptions(field, v)
	default:
		return fmt.Errorf("%s: unsupported value type %T", field, v)
	}
}

// fields returns the handler's table as key/value pairs in the order they
// are written, without the options table.
func (h RuntimeHandler) fields() []keyValue {
	kv := []keyValue{{"runtime_type", h.RuntimeType}}
	if h.RuntimePath != "" {
		kv = append(kv, keyValue{"runtime_path", h.RuntimePath})
	}
	if len(h.PodAnnotations) > 0 {
		kv = append(kv, keyValue{"pod_annotations", h.PodAnnotations})
	}
	if len(h.ContainerAnnotations) > 0 {
		kv = append(kv, keyValue{"container_annotations", h.ContainerAnnotations})
	}
	if h.PrivilegedWithoutHostDevices {
		kv = append(kv, keyValue{"privileged_without_host_devices", true})
	}
	if h.Snapshotter != "" {
		kv = append(kv, keyValue{"snapshotter", h.Snapshotter})
	}
	if h.Sandboxer != "" {
		kv = append(kv, keyValue{"sandboxer", h.Sandboxer})
	}
	if h.IOType != "" {
		kv = append(kv, keyValue{"io_type", h.IOType})
	}
	for _, k := range slices.Sorted(maps.Keys(h.Settings)) {
		if _, table := h.Settings[k].(map[string]any); !table {
			kv = append(kv, keyValue{k, h.Settings[k]})
		}
	}
	return kv
}

type keyValue struct {
	key   string
	value any
}
