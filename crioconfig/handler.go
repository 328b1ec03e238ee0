package crioconfig

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	units "github.com/docker/go-units"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kinds of CRI-O runtime handler (runtime_type).
const (
	// KindOCI is an OCI runtime binary (crun, runc, runsc, youki, crun
	// with Wasm) that CRI-O runs under conmon.
	KindOCI = "oci"
	// KindVM is a containerd shim v2 binary (Kata's, for example) that
	// CRI-O drives over the shim's ttrpc API.
	KindVM = "vm"
)

// RuntimeHandler is one [crio.runtime.runtimes.NAME] table.
type RuntimeHandler struct {
	// Name is the handler name; it must equal the RuntimeClass handler, so
	// it must be an RFC 1123 DNS label.
	Name string
	// Kind is KindOCI or KindVM (runtime_type).
	Kind string
	// RuntimePath is the absolute path of the binary (runtime_path). CRI-O
	// looks the handler's name up in $PATH when it is empty; shimkit
	// always writes it, so that it can be checked before CRI-O restarts.
	RuntimePath string
	// RuntimeRoot is runtime_root: for KindOCI, where the runtime keeps
	// its state (optional); for KindVM, the directory under which CRI-O
	// makes each container's IO FIFOs (RuntimeRoot/crio/fifo), which the
	// shim opens. Empty on a KindVM handler, the Writer writes
	// VMRuntimeRoot(Name): CRI-O v1.34 would make the FIFOs under the
	// relative path crio/fifo, which the shim, working in the bundle,
	// cannot open ("opening file crio/fifo/io/...: no such file"), so no
	// pod sandbox of the handler starts; Kata's configuration sets
	// /run/vc.
	RuntimeRoot string
	// RuntimeConfigPath is the shim's own config file
	// (runtime_config_path); KindVM only, optional, and it must exist.
	RuntimeConfigPath string
	// AllowedAnnotations are the experimental annotations CRI-O passes to
	// this handler (allowed_annotations), each one CRI-O knows.
	AllowedAnnotations []string
	// ContainerMinMemory is the smallest memory limit CRI-O accepts for a
	// container of this handler (container_min_memory), in CRI-O's syntax
	// ("12MiB", "500k", "1.5GB"). Empty: CRI-O's default, 12 MiB for every
	// handler but its built-in crun.
	ContainerMinMemory string
	// PrivilegedWithoutHostDevices keeps host devices out of privileged
	// containers of this handler.
	PrivilegedWithoutHostDevices bool
}

// vmBinaryRE is CRI-O's RuntimeTypeVMBinaryPattern
// (containerd-shim-([a-zA-Z0-9\-\+])+-v2), anchored: CRI-O matches it
// anywhere in the base name, shimkit asks for the whole name.
var vmBinaryRE = regexp.MustCompile(`^containerd-shim-[a-zA-Z0-9+-]+-v2$`)

// knownAnnotations is annotations.AllAllowedAnnotations of CRI-O v1.34.0
// (pkg/annotations/annotations.go, with goresctrl's rdt class
// annotation): an allowed_annotations entry outside it makes CRI-O drop
// the handler ("invalid allowed_annotation").
var knownAnnotations = []string{
	"io.kubernetes.cri-o.userns-mode",
	"io.kubernetes.cri-o.cgroup2-mount-hierarchy-rw",
	"io.kubernetes.cri-o.UnifiedCgroup",
	"io.kubernetes.cri-o.ShmSize",
	"io.kubernetes.cri-o.Devices",
	"cpu-load-balancing.crio.io",
	"cpu-quota.crio.io",
	"irq-load-balancing.crio.io",
	"io.containers.trace-syscall",
	"io.kubernetes.cri.rdt-class",
	"io.kubernetes.cri-o.TrySkipVolumeSELinuxLabel",
	"cpu-c-states.crio.io",
	"cpu-freq-governor.crio.io",
	"io.kubernetes.cri-o.seccompNotifierAction",
	"io.kubernetes.cri-o.umask",
	"io.kubernetes.cri-o.PodLinuxOverhead",
	"io.kubernetes.cri-o.PodLinuxResources",
	"io.kubernetes.cri-o.LinkLogs",
	"cpu-shared.crio.io",
	"seccomp-profile.kubernetes.cri-o.io",
	"io.kubernetes.cri-o.DisableFIPS",
	"bundle",
	"org.systemd.property.",
	"org.criu.config",
	"module.wasm.image/variant",
	"io.kubernetes.cri.container-type",
	"run.oci.",
}

// KnownAnnotations returns the allowed_annotations values CRI-O v1.34
// accepts.
func KnownAnnotations() []string { return slices.Clone(knownAnnotations) }

// Validate checks the handler without looking at the disk and names the
// offending field. It refuses everything CRI-O v1.34 would drop the
// handler for (pkg/config RuntimeHandler.Validate), and what shimkit does
// not write (an empty runtime_path).
func (h RuntimeHandler) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: handler %q: "+format, append([]any{ErrInvalidHandler, h.Name}, args...)...)
	}
	if err := validName(h.Name); err != nil {
		return err
	}
	switch h.Kind {
	case KindOCI:
		if h.RuntimeConfigPath != "" {
			return bad("runtime_config_path is only for runtime_type %q (CRI-O drops an %q handler that sets it)", KindVM, KindOCI)
		}
	case KindVM:
		if base := path.Base(h.RuntimePath); !vmBinaryRE.MatchString(base) {
			return bad("runtime_path %q: a %q handler's binary must be named containerd-shim-<name>-v2 (CRI-O drops it otherwise), not %q", h.RuntimePath, KindVM, base)
		}
	default:
		return bad("runtime_type %q is not %q or %q", h.Kind, KindOCI, KindVM)
	}
	for field, p := range map[string]string{"runtime_path": h.RuntimePath, "runtime_root": h.RuntimeRoot, "runtime_config_path": h.RuntimeConfigPath} {
		if err := checkPath(p, field == "runtime_path"); err != nil {
			return bad("%s %q: %v", field, p, err)
		}
	}
	for _, a := range h.AllowedAnnotations {
		if !slices.Contains(knownAnnotations, a) {
			return bad("allowed_annotations: %q is not an annotation CRI-O v1.34 knows (CRI-O drops the handler); see KnownAnnotations", a)
		}
	}
	if h.ContainerMinMemory != "" {
		if _, err := units.RAMInBytes(h.ContainerMinMemory); err != nil {
			return bad("container_min_memory %q: %v (CRI-O falls back to 12MiB)", h.ContainerMinMemory, err)
		}
	}
	return nil
}

// VMRuntimeRoot is the runtime_root the Writer writes for a KindVM
// handler that sets none: a directory of shimkit's own under /run, one
// per handler.
func VMRuntimeRoot(name string) string { return "/run/shimkit/crio/" + name }

// withDefaults is h as the Writer writes it: a KindVM handler's
// RuntimeRoot filled in (VMRuntimeRoot).
func (h RuntimeHandler) withDefaults() RuntimeHandler {
	if h.Kind == KindVM && h.RuntimeRoot == "" {
		h.RuntimeRoot = VMRuntimeRoot(h.Name)
	}
	return h
}

// validName accepts a handler name that is an RFC 1123 DNS label.
func validName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%w: handler %q: name: %s", ErrInvalidHandler, name, strings.Join(errs, "; "))
	}
	return nil
}

// checkPath accepts a clean absolute path without control characters, or
// an empty one unless required.
func checkPath(p string, required bool) error {
	switch {
	case p == "" && required:
		return fmt.Errorf("must be set")
	case p == "":
		return nil
	case !path.IsAbs(p) || path.Clean(p) != p:
		return fmt.Errorf("must be a clean absolute path")
	case !utf8.ValidString(p):
		return fmt.Errorf("is not UTF-8 (TOML files are)")
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("contains a control character")
	}
	return nil
}
