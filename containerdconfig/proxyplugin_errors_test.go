package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/shimkit/shimkit/containerdconfig"
)

// TestProxyPluginBadInput drives each kind of bad input through
// InstallProxyPlugin on a node root and checks the error (sentinel, file,
// line, key) and that no file changed or appeared.
func TestProxyPluginBadInput(t *testing.T) {
	const (
		cfg   = "/etc/containerd/config.toml"
		v3    = "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"
		other = "[proxy_plugins.vmm]\n  type = \"sandbox\"\n  address = \"/run/other.sock\"\n"
	)
	long := "/run/" + strings.Repeat("s", 110) + ".sock"
	tests := []struct {
		name   string
		files  map[string]string
		plugin containerdconfig.ProxyPlugin
		mode   containerdconfig.Mode
		want   error
		inMsg  []string
	}{
		{name: "name not a DNS label", plugin: containerdconfig.ProxyPlugin{Name: "Kuasar_VMM", Type: "sandbox", Address: "/run/a.sock"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{`name "Kuasar_VMM"`}},
		{name: "unknown type", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "runtime", Address: "/run/a.sock"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{`type "runtime"`}},
		{name: "missing type", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Address: "/run/a.sock"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{`type ""`}},
		{name: "relative address", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: "run/a.sock"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"address"}},
		{name: "address with scheme", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: "unix:///run/a.sock"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"address"}},
		{name: "unclean address", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: "/run/../a.sock"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"address"}},
		{name: "address too long for a socket", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: long},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"longer"}},
		{name: "bad platform", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: "/run/a.sock", Platform: "linux amd64"},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"platform"}},
		{name: "exports sets address", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: "/run/a.sock", Exports: map[string]string{"address": "/x"}},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"exports"}},
		{name: "capability with space", plugin: containerdconfig.ProxyPlugin{Name: "vmm", Type: "sandbox", Address: "/run/a.sock", Capabilities: []string{"a b"}},
			want: containerdconfig.ErrInvalidProxyPlugin, inMsg: []string{"capability"}},
		{name: "user's plugin in the root file", files: map[string]string{cfg: "version = 2\n\n# mine\n" + other},
			want: containerdconfig.ErrConflict, inMsg: []string{cfg + ":4:1", "proxy_plugins.vmm", "not taken over"}},
		{name: "user's plugin as inline table", files: map[string]string{cfg: "version = 2\n[proxy_plugins]\n  vmm = { type = \"sandbox\", address = \"/run/other.sock\" }\n"},
			want: containerdconfig.ErrConflict, inMsg: []string{cfg + ":3:1", "proxy_plugins.vmm"}},
		{name: "user's plugin by dotted keys", files: map[string]string{cfg: "version = 2\n[proxy_plugins]\n  vmm.type = \"content\"\n  vmm.address = \"/run/vmm.sock\"\n"},
			want: containerdconfig.ErrConflict, inMsg: []string{cfg + ":3:1"}},
		{name: "user's plugin in root, edit goes to drop-in", files: map[string]string{cfg: v3 + other},
			want: containerdconfig.ErrConflict, inMsg: []string{cfg + ":3:1", "proxy_plugins.vmm"}},
		{name: "user's plugin in another drop-in", files: map[string]string{cfg: v3, "/etc/containerd/conf.d/10-kuasar.toml": "version = 3\n" + other},
			want: containerdconfig.ErrConflict, inMsg: []string{"conf.d/10-kuasar.toml:2:1", "proxy_plugins.vmm"}},
		{name: "user's plugin in root, ModeFile", mode: containerdconfig.ModeFile, files: map[string]string{cfg: v3 + other},
			want: containerdconfig.ErrConflict, inMsg: []string{cfg + ":3:1"}},
		{name: "proxy_plugins is not a table", files: map[string]string{cfg: "version = 2\nproxy_plugins = \"none\"\n"},
			want: containerdconfig.ErrConflict, inMsg: []string{"proxy_plugins"}},
		{name: "proxy_plugins closed as inline table", files: map[string]string{cfg: "version = 2\nproxy_plugins = { stargz = { type = \"snapshot\", address = \"/run/s.sock\" } }\n"},
			want: containerdconfig.ErrConflict, inMsg: []string{"proxy_plugins.vmm", "invalid"}},
		{name: "unparsable toml", files: map[string]string{cfg: "version = 2\n[proxy_plugins.vmm\n"},
			want: containerdconfig.ErrParse, inMsg: []string{cfg + ":2:"}},
		{name: "unclosed shimkit block", files: map[string]string{cfg: "version = 2\n# >>> shimkit: proxy plugin \"vmm\" (managed by shimkit; do not edit) >>>\n[proxy_plugins.vmm]\n"},
			want: containerdconfig.ErrConflict, inMsg: []string{cfg + ":2:1", "no end marker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := tt.files
			if files == nil {
				files = map[string]string{cfg: "version = 2\n"}
			}
			writeTree(t, root, files)
			before := snapshot(t, root)
			p := tt.plugin
			if p.Name == "" {
				p = vmm
			}
			preset, _ := containerdconfig.PresetNamed(containerdconfig.PresetContainerd)
			_, err := containerdconfig.NewInstallProxyPlugin(containerdconfig.Target{Root: root, Preset: preset, Mode: tt.mode}, p).Apply(context.Background())
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			for _, s := range tt.inMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if after := snapshot(t, root); !slices.Equal(before, after) {
				t.Errorf("files changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestSandboxerHandlerBadInput: the sandboxer fields of a handler are
// checked like the rest.
func TestSandboxerHandlerBadInput(t *testing.T) {
	tests := []struct {
		name  string
		h     containerdconfig.RuntimeHandler
		inMsg string
	}{
		{"sandboxer not a plugin name", containerdconfig.RuntimeHandler{Name: "k", RuntimeType: "io.containerd.k.v1", Sandboxer: "VMM sock"}, "sandboxer"},
		{"io_type unknown", containerdconfig.RuntimeHandler{Name: "k", RuntimeType: "io.containerd.k.v1", IOType: "hvsock"}, "io_type"},
		{"sandboxer repeated in settings", containerdconfig.RuntimeHandler{Name: "k", RuntimeType: "io.containerd.k.v1", Settings: map[string]any{"sandboxer": "vmm"}}, "settings.sandboxer"},
		{"io_type repeated in settings", containerdconfig.RuntimeHandler{Name: "k", RuntimeType: "io.containerd.k.v1", Settings: map[string]any{"io_type": "fifo"}}, "settings.io_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := containerdconfig.AddHandler("f", []byte("version = 3\n"), tt.h)
			if !errors.Is(err, containerdconfig.ErrInvalidHandler) || !strings.Contains(err.Error(), tt.inMsg) {
				t.Errorf("err = %v, want ErrInvalidHandler naming %s", err, tt.inMsg)
			}
		})
	}
}

// FuzzAddRemoveProxyPlugin checks, for any input: what parses gets the
// plugin added with every original setting kept (or is refused with a
// located conflict), and add then remove gives back the original bytes.
func FuzzAddRemoveProxyPlugin(f *testing.F) {
	for _, glob := range []string{"testdata/edit/*.toml", "testdata/proxy/*.toml"} {
		seeds, _ := filepath.Glob(glob)
		for _, s := range seeds {
			data, err := os.ReadFile(s)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, s := range []string{
		"", "[proxy_plugins]", "proxy_plugins = 1", "[proxy_plugins.vmm]\ntype = \"sandbox\"\n",
		"[proxy_plugins]\nvmm = {}\n", "[proxy_plugins]\nvmm.type = 'diff'\n", "proxy_plugins.x.type = 'x'\n",
		"# >>> shimkit: proxy plugin \"vmm\" (managed by shimkit; do not edit) >>>\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree := map[string]any{}
		parseErr := toml.Unmarshal(data, &tree)
		out, changed, err := containerdconfig.AddProxyPlugin("fuzz.toml", data, vmm)
		switch {
		case parseErr != nil:
			if !errors.Is(err, containerdconfig.ErrParse) {
				t.Fatalf("invalid TOML accepted: err=%v", err)
			}
			return
		case err != nil:
			var fe *containerdconfig.FileError
			if !errors.As(err, &fe) || !errors.Is(err, containerdconfig.ErrConflict) && !errors.Is(err, containerdconfig.ErrVersion) {
				t.Fatalf("valid TOML refused without a located conflict: %v", err)
			}
			return
		case !changed:
			if !bytes.Equal(out, data) {
				t.Fatal("unchanged but different bytes")
			}
			return
		}
		cfg, err := containerdconfig.Parse("out", out)
		if err != nil || cfg.ProxyPlugin("vmm") == nil {
			t.Fatalf("result does not parse or lacks the plugin: %v\n%s", err, out)
		}
		back, changed, err := containerdconfig.RemoveProxyPlugin("out", out, "vmm")
		if err != nil || !changed || !bytes.Equal(back, data) {
			t.Fatalf("add then remove: changed=%v err=%v\nin:  %q\nout: %q", changed, err, data, back)
		}
	})
}
