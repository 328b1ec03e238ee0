package crioconfig

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// DropInName returns the base name of shimkit's drop-in for the handler:
// 90-shimkit-<name>.conf. CRI-O reads every file of the drop-in directory
// whatever its name, in lexical order, so the suffix is for people; 90-
// puts it after the usual distribution drop-ins (00-default, 10-crun).
func DropInName(handler string) string { return "90-shimkit-" + handler + ".conf" }

// Render returns the drop-in shimkit writes for h on behalf of owner: a
// header naming the owner, then the handler's table. The handler must be
// valid (Validate).
func Render(owner string, h RuntimeHandler) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by shimkit for %s: the CRI-O runtime handler %q.\n", owner, h.Name)
	b.WriteString("# shimkit removes this file with the handler. An edited file is no longer\n")
	b.WriteString("# shimkit's: it is then left alone, and shimkit refuses to change it.\n\n")
	fmt.Fprintf(&b, "[crio.runtime.runtimes.%s]\n", h.Name)
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s = %s\n", k, quote(v))
		}
	}
	kv("runtime_type", h.Kind)
	kv("runtime_path", h.RuntimePath)
	kv("runtime_root", h.RuntimeRoot)
	kv("runtime_config_path", h.RuntimeConfigPath)
	if len(h.AllowedAnnotations) > 0 {
		b.WriteString("allowed_annotations = [\n")
		for _, a := range h.AllowedAnnotations {
			fmt.Fprintf(&b, "  %s,\n", quote(a))
		}
		b.WriteString("]\n")
	}
	kv("container_min_memory", h.ContainerMinMemory)
	if h.PrivilegedWithoutHostDevices {
		b.WriteString("privileged_without_host_devices = true\n")
	}
	return b.Bytes()
}

// quote returns s as a TOML basic string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// handlerTable is a handler as CRI-O decodes it (pkg/config
// RuntimeHandler), for the keys shimkit writes.
type handlerTable struct {
	RuntimeType                  string   `toml:"runtime_type"`
	RuntimePath                  string   `toml:"runtime_path"`
	RuntimeRoot                  string   `toml:"runtime_root"`
	RuntimeConfigPath            string   `toml:"runtime_config_path"`
	AllowedAnnotations           []string `toml:"allowed_annotations"`
	ContainerMinMemory           string   `toml:"container_min_memory"`
	PrivilegedWithoutHostDevices bool     `toml:"privileged_without_host_devices"`
}

type dropInDoc struct {
	Crio struct {
		Runtime struct {
			Runtimes map[string]handlerTable `toml:"runtimes"`
		} `toml:"runtime"`
	} `toml:"crio"`
}

// verifyRendered decodes data strictly (no key shimkit did not mean) and
// checks that it defines exactly h.
func verifyRendered(data []byte, h RuntimeHandler) error {
	var doc dropInDoc
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%w: the drop-in shimkit rendered for %q does not decode: %v", ErrInvalidHandler, h.Name, err)
	}
	want := map[string]handlerTable{h.Name: {
		RuntimeType: h.Kind, RuntimePath: h.RuntimePath, RuntimeRoot: h.RuntimeRoot, RuntimeConfigPath: h.RuntimeConfigPath,
		AllowedAnnotations: slices.Clone(h.AllowedAnnotations), ContainerMinMemory: h.ContainerMinMemory,
		PrivilegedWithoutHostDevices: h.PrivilegedWithoutHostDevices,
	}}
	if len(h.AllowedAnnotations) == 0 {
		t := want[h.Name]
		t.AllowedAnnotations = nil
		want[h.Name] = t
	}
	if !reflect.DeepEqual(doc.Crio.Runtime.Runtimes, want) {
		return fmt.Errorf("%w: the drop-in shimkit rendered for %q decodes as %+v, not %+v", ErrInvalidHandler, h.Name, doc.Crio.Runtime.Runtimes, want)
	}
	return nil
}

// checkOwner accepts a non-empty owner without control characters (it is
// written into a comment line).
func checkOwner(owner string) error {
	if owner == "" || !utf8.ValidString(owner) || strings.ContainsFunc(owner, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("crioconfig: owner %q must be non-empty and on one line", owner)
	}
	return nil
}
