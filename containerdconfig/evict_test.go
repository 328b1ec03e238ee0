package containerdconfig_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
)

// rcmBlock is what runtime-class-manager's node installer appends for a
// runtime (its generateConfig): a blank line, its comment, the handler
// table whose runtime_type is the binary's path, and an options table
// without a final newline.
func rcmBlock(marker, domain, name string, options ...string) string {
	s := "\n# " + marker + " runtime config for " + name + "\n[plugins.\"" + domain + "\".containerd.runtimes." + name + "]\nruntime_type = \"/opt/rcm/bin/containerd-shim-" + name + "\"\n"
	if len(options) > 0 {
		s += "[plugins.\"" + domain + "\".containerd.runtimes." + name + ".options]"
		for _, o := range options {
			s += "\n" + o
		}
	}
	return s
}

func fromRCM(table map[string]any) bool {
	rt, _ := table["runtime_type"].(string)
	return strings.HasPrefix(rt, "/opt/rcm/bin/")
}

// TestEvictHandler: the block another installer appended is cut, with its
// marker comment and the blank line before it, giving back the file as it
// was before that installer; a handler it did not write is refused.
func TestEvictHandler(t *testing.T) {
	for _, tt := range []struct {
		name, file, block string
	}{
		{"rcm v2 with options", "testdata/edit/v2-default-containerd-1.7.toml", rcmBlock("RCM", "io.containerd.grpc.v1.cri", "spin-v2", "SystemdCgroup = true", `Foo = "bar"`)},
		{"rcm v2 without options", "testdata/edit/v2-default-containerd-1.6.toml", rcmBlock("RCM", "io.containerd.grpc.v1.cri", "spin-v2")},
		{"rcm v3", "testdata/edit/v3-default-containerd-2.2.toml", rcmBlock("RCM", "io.containerd.cri.v1.runtime", "spin-v2", "SystemdCgroup = true")},
		{"kwasm era", "testdata/edit/v2-default-containerd-1.7.toml", rcmBlock("KWASM", "io.containerd.grpc.v1.cri", "spin-v2")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			orig, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			data := append(bytes.Clone(orig), tt.block...)
			out, changed, err := containerdconfig.EvictHandler("config.toml", data, "spin-v2", fromRCM)
			if err != nil || !changed {
				t.Fatalf("evict: changed=%v err=%v", changed, err)
			}
			if !bytes.Equal(out, orig) {
				t.Errorf("not the file from before:\n%s", cmp.Diff(string(orig), string(out)))
			}
			// Then shimkit's own handler goes in as usual.
			if _, _, err := containerdconfig.AddHandler("config.toml", out, containerdconfig.RuntimeHandler{Name: "spin-v2", RuntimeType: "io.containerd.spin.v2"}); err != nil {
				t.Errorf("add after evict: %v", err)
			}
		})
	}

	orig, err := os.ReadFile("testdata/edit/v2-user-spin-different.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = containerdconfig.EvictHandler("config.toml", orig, "spin", fromRCM)
	var fe *containerdconfig.FileError
	if !errors.Is(err, containerdconfig.ErrConflict) || !errors.As(err, &fe) || fe.Line == 0 {
		t.Errorf("an admin's handler: %v, want a Conflict naming its line", err)
	}
	if out, changed, err := containerdconfig.EvictHandler("config.toml", orig, "absent", fromRCM); err != nil || changed || !bytes.Equal(out, orig) {
		t.Errorf("absent handler: changed=%v err=%v", changed, err)
	}
	ours, _, err := containerdconfig.AddHandler("config.toml", orig, containerdconfig.RuntimeHandler{Name: "mine", RuntimeType: "io.containerd.mine.v2", RuntimePath: "/opt/rcm/bin/containerd-shim-mine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, err := containerdconfig.EvictHandler("config.toml", ours, "mine", fromRCM); err != nil || changed {
		t.Errorf("shimkit's own handler: changed=%v err=%v, want left alone", changed, err)
	}
}
