package k3s_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/shimkit/shimkit/internal/testutil/k3s"
)

func agent(g k3s.Generation) k3s.Agent {
	return k3s.Agent{Program: "k3s", DataDir: "/var/lib/rancher/k3s", Generation: g, Root: "/var/lib/containerd", PauseImage: "pause:1"}
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		t.Fatalf("rendered config: %v\n%s", err, data)
	}
	return m
}

func runtimes(t *testing.T, m map[string]any, schema int) map[string]any {
	t.Helper()
	id := "io.containerd.cri.v1.runtime"
	if schema == 2 {
		id = "io.containerd.grpc.v1.cri"
	}
	c := m["plugins"].(map[string]any)[id].(map[string]any)["containerd"].(map[string]any)
	return c["runtimes"].(map[string]any)
}

// TestBases: each generation's base renders to a config with runc, and
// imports config-v3.toml.d only where k3s's does.
func TestBases(t *testing.T) {
	root := t.TempDir()
	for _, g := range []k3s.Generation{{Schema: 3, Imports: true}, {Schema: 3}, {Schema: 2}} {
		out, err := agent(g).RenderConfig(root, "/usr/bin")
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, out)
		if _, ok := runtimes(t, m, g.Schema)["runc"]; !ok {
			t.Errorf("%+v: no runc runtime:\n%s", g, out)
		}
		imports, _ := m["imports"].([]any)
		if want := g.Imports && g.Schema == 3; (len(imports) == 1) != want {
			t.Errorf("%+v: imports %v", g, imports)
		} else if want && imports[0] != "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/*.toml" {
			t.Errorf("imports %v", imports)
		}
	}
}

// TestDetectedRuntimeAndTemplate: a shim binary k3s knows on its PATH gets
// its table from the base; a template that defines the same table after
// {{ template "base" . }} renders a config containerd refuses (the table
// twice), which is what happens on a real k3s.
func TestDetectedRuntimeAndTemplate(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "usr/local/bin/containerd-shim-spin-v2")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := agent(k3s.Generation{Schema: 3})
	if got := k3s.FindRuntimes(root, "/usr/local/sbin:/usr/local/bin:/usr/bin"); got["spin"].BinaryName != "/usr/local/bin/containerd-shim-spin-v2" || len(got) != 1 {
		t.Fatalf("found %v", got)
	}
	out, err := a.RenderConfig(root, "/usr/local/bin")
	if err != nil {
		t.Fatal(err)
	}
	spin, _ := runtimes(t, decode(t, out), 3)["spin"].(map[string]any)
	if spin["runtime_type"] != "io.containerd.spin.v2" {
		t.Fatalf("spin: %v\n%s", spin, out)
	}
	tmpl := "{{ template \"base\" . }}\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.spin]\n  runtime_type = \"io.containerd.spin.v2\"\n"
	if err := os.MkdirAll(filepath.Join(root, a.ConfigDir()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, a.ConfigDir(), "config-v3.toml.tmpl"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = a.RenderConfig(root, "/usr/local/bin")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := toml.Unmarshal(out, &m); err == nil || !strings.Contains(err.Error(), "spin") {
		t.Fatalf("the table twice parses: %v\n%s", err, out)
	}
}

// TestTemplateActions: the user's template is a Go template: a {{ in a
// value is an action (k3s cannot render it), {{"{{"}} is a brace pair.
func TestTemplateActions(t *testing.T) {
	base := agent(k3s.Generation{Schema: 3}).Generation.Base(3)
	if _, err := k3s.Render([]byte("{{ template \"base\" . }}\nx = \"/etc/{{node}}.toml\"\n"), base, k3s.Data{}); err == nil || !strings.Contains(err.Error(), `function "node" not defined`) {
		t.Errorf("an action in a value: %v", err)
	}
	out, err := k3s.Render([]byte("x = \"/etc/{{\"{{\"}}node}}.toml\"\n"), base, k3s.Data{})
	if err != nil || string(out) != "x = \"/etc/{{node}}.toml\"\n" {
		t.Errorf("escaped: %q %v", out, err)
	}
}
