package containerdconfig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
)

// TestBadInputLeavesFilesUntouched drives each kind of bad input through
// the Mutator on a node root and checks the error (sentinel, file, line,
// key) and that no file changed or appeared.
func TestBadInputLeavesFilesUntouched(t *testing.T) {
	const cri = `[plugins."io.containerd.grpc.v1.cri".containerd]`
	tests := []struct {
		name    string
		preset  string
		files   map[string]string // node path → content
		handler containerdconfig.RuntimeHandler
		want    error
		inMsg   []string // the message names these
	}{
		{
			name:  "unparsable toml",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n\n[plugins\nfoo = 1\n"},
			want:  containerdconfig.ErrParse, inMsg: []string{"/etc/containerd/config.toml:3:"},
		},
		{
			name:  "duplicate table",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n[a]\nx = 1\n[a]\ny = 2\n"},
			want:  containerdconfig.ErrParse, inMsg: []string{"config.toml:4:"},
		},
		{
			name:  "unknown version",
			files: map[string]string{"/etc/containerd/config.toml": "# c\nversion = 7\n"},
			want:  containerdconfig.ErrVersion, inMsg: []string{"config.toml:2:1", "key version"},
		},
		{
			name:    "handler name not a DNS label",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 2\n"},
			handler: containerdconfig.RuntimeHandler{Name: "Spin_V2", RuntimeType: "io.containerd.spin.v2"},
			want:    containerdconfig.ErrInvalidHandler, inMsg: []string{`name "Spin_V2"`},
		},
		{
			name:    "runtime type without version",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 2\n"},
			handler: containerdconfig.RuntimeHandler{Name: "spin", RuntimeType: "spin"},
			want:    containerdconfig.ErrInvalidHandler, inMsg: []string{"runtime_type"},
		},
		{
			name:    "relative runtime path",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 2\n"},
			handler: containerdconfig.RuntimeHandler{Name: "spin", RuntimeType: "io.containerd.spin.v2", RuntimePath: "bin/shim"},
			want:    containerdconfig.ErrInvalidHandler, inMsg: []string{"runtime_path"},
		},
		{
			name:    "option of unsupported type",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 2\n"},
			handler: containerdconfig.RuntimeHandler{Name: "spin", RuntimeType: "io.containerd.spin.v2", Options: map[string]any{"Ch": make(chan int)}},
			want:    containerdconfig.ErrInvalidHandler, inMsg: []string{"options.Ch"},
		},
		{
			name:  "handler defined inline",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n" + cri + "\n  runtimes = { spin = { runtime_type = \"io.containerd.old.v1\" } }\n"},
			want:  containerdconfig.ErrConflict, inMsg: []string{"config.toml:3:1", "inline"},
		},
		{
			name:  "handler defined by dotted keys",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n" + cri + "\n  runtimes.spin.runtime_type = \"io.containerd.old.v1\"\n"},
			want:  containerdconfig.ErrConflict, inMsg: []string{"config.toml:3:1"},
		},
		{
			name:  "the user's handler, not adopted",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n\n# mine\n" + userSpinTables},
			want:  containerdconfig.ErrConflict, inMsg: []string{"config.toml:4:1", "runtimes.spin", "not written by shimkit"},
		},
		{
			name:  "runtimes closed as inline table",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n" + cri + "\n  runtimes = { runc = { runtime_type = \"io.containerd.runc.v2\" } }\n"},
			want:  containerdconfig.ErrConflict, inMsg: []string{"runtimes.spin"},
		},
		{
			name:  "plugins is not a table",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\nplugins = \"none\"\n"},
			want:  containerdconfig.ErrConflict,
		},
		{
			name:  "unclosed shimkit block",
			files: map[string]string{"/etc/containerd/config.toml": "version = 2\n# >>> shimkit: runtime handler \"spin\" (managed by shimkit; do not edit) >>>\n[x]\n"},
			want:  containerdconfig.ErrConflict, inMsg: []string{"config.toml:2:1", "no end marker"},
		},
		{
			name:   "k3s template with other actions",
			preset: containerdconfig.PresetK3s,
			files: map[string]string{
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml":      "version = 2\n",
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl": "{{ template \"base\" . }}\n{{ if .NodeConfig.AgentConfig.Snapshotter }}\n[x]\n{{ end }}\n",
			},
			want: containerdconfig.ErrTemplate, inMsg: []string{"config.toml.tmpl:2:1"},
		},
		{
			name:   "k3s template without base",
			preset: containerdconfig.PresetK3s,
			files: map[string]string{
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml":      "version = 2\n",
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl": "version = 2\n[plugins]\n",
			},
			want: containerdconfig.ErrTemplate, inMsg: []string{"config.toml.tmpl", "base"},
		},
		{
			name:   "k3s template action inside a value",
			preset: containerdconfig.PresetK3s,
			files: map[string]string{
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml":      "version = 2\n",
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl": "{{ template \"base\" . }}\n[x]\n  root = \"{{ .NodeConfig.Containerd.Root }}\"\n",
			},
			want: containerdconfig.ErrTemplate, inMsg: []string{"config.toml.tmpl:3:"},
		},
		{
			name:   "k3s generates the handler with other settings",
			preset: containerdconfig.PresetK3s,
			files: map[string]string{
				"/var/lib/rancher/k3s/agent/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin]\n  runtime_type = \"io.containerd.spin.v2\"\n",
			},
			want: containerdconfig.ErrConflict, inMsg: []string{"agent/etc/containerd/config.toml", "generates"},
		},
		{
			name:   "k3s never started",
			preset: containerdconfig.PresetK3s,
			files:  map[string]string{"/var/lib/rancher/k3s/agent/etc/containerd/.keep": ""},
			want:   os.ErrNotExist, inMsg: []string{"config.toml.tmpl or config-v3.toml.tmpl"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			before := snapshot(t, root)
			h := tt.handler
			if h.Name == "" {
				h = spin
			}
			preset := tt.preset
			if preset == "" {
				preset = containerdconfig.PresetContainerd
			}
			p, err := containerdconfig.PresetNamed(preset)
			if err != nil {
				t.Fatal(err)
			}
			_, err = containerdconfig.NewInstall(containerdconfig.Target{Root: root, Preset: p}, h).Apply(context.Background())
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

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		local := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot lists every file under root with its content.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out = append(out, strings.TrimPrefix(p, root)+"="+string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
