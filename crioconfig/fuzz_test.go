package crioconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzRender: every handler Validate accepts renders to a drop-in that
// decodes to exactly that handler and defines nothing else.
func FuzzRender(f *testing.F) {
	f.Add("crun-wasm", "oci", "/opt/bin/crun", "/run/crun", "", "module.wasm.image/variant", "12MiB", "shim/a")
	f.Add("kata", "vm", "/opt/kata/bin/containerd-shim-kata-v2", "", "/etc/kata/c.toml", "", "", "shim/b")
	f.Add("q", "oci", "/a \"b\"\\c/\u00e9\u2028crun", "", "", "run.oci.", "1.5 GB", "x")
	f.Fuzz(func(t *testing.T, name, kind, path, root, cfg, ann, mem, owner string) {
		h := RuntimeHandler{Name: name, Kind: kind, RuntimePath: path, RuntimeRoot: root, RuntimeConfigPath: cfg, ContainerMinMemory: mem}
		if ann != "" {
			h.AllowedAnnotations = strings.Split(ann, ",")
		}
		if h.Validate() != nil || checkOwner(owner) != nil {
			return
		}
		data := Render(owner, h)
		if err := verifyRendered(data, h); err != nil {
			t.Fatal(err)
		}
		src, err := parseSource("f.conf", data)
		if err != nil || len(src.Handlers) != 1 || src.Handlers[0] != name || src.DefaultRuntime != "" {
			t.Fatalf("parseSource = %+v, %v\n%s", src, err, data)
		}
	})
}

// FuzzParseSource: any bytes as a file CRI-O reads either parse or fail
// with ErrParse naming the file; never a panic.
func FuzzParseSource(f *testing.F) {
	f.Add([]byte("[crio.runtime]\ndefault_runtime = \"runc\"\n[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/bin/runc\"\n"))
	f.Add([]byte("[crio.runtime.runtimes]\nx = 1\n"))
	f.Add([]byte("crio.runtime.runtimes.a.runtime_type = \"vm\"\n"))
	f.Add([]byte("[crio.runtime\n"))
	f.Add([]byte("[crio.runtime]\ncgroup_manager = \"cgroupfs\"\nconmon_cgroup = \"pod\"\n"))
	f.Add([]byte("[crio.runtime]\ncgroup_manager = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := parseSource("/etc/crio/crio.conf.d/x", data)
		if err != nil {
			var fe *FileError
			if !errors.Is(err, ErrParse) || !errors.As(err, &fe) || fe.Path != "/etc/crio/crio.conf.d/x" {
				t.Fatalf("error %v does not wrap ErrParse naming the file", err)
			}
			return
		}
		if !slices.IsSorted(src.Handlers) || len(slices.Compact(slices.Clone(src.Handlers))) != len(src.Handlers) {
			t.Fatalf("handlers %q are not sorted and unique", src.Handlers)
		}
	})
}
