package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
)

func TestImageBuilderAddsAndRemoves(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/containerd/config.toml")
	orig := []byte("version = 2\n# baked into the image\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"-root", root, "-name", "spin", "-runtime-type", "io.containerd.spin.v2",
		"-runtime-path", "/usr/local/bin/containerd-shim-spin-v2", "-option", "SystemdCgroup=true", "-option", "ConfigPath=/etc/spin.toml"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "registered") {
		t.Errorf("output: %s", out.String())
	}
	data, _ := os.ReadFile(cfg)
	c, err := containerdconfig.Parse(cfg, data)
	if err != nil || !c.HasHandler("spin") {
		t.Fatalf("handler not registered: %v", err)
	}
	if opts := c.Handler("spin")["options"].(map[string]any); opts["SystemdCgroup"] != true || opts["ConfigPath"] != "/etc/spin.toml" {
		t.Errorf("options = %v; want a TOML bool and a string", opts)
	}
	if _, err := os.Stat(cfg + ".shimkit-journal"); !os.IsNotExist(err) {
		t.Error("backup left behind")
	}

	out.Reset()
	if err := run(context.Background(), []string{"-root", root, "-name", "spin", "-remove"}, &out); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(cfg); !bytes.Equal(data, orig) {
		t.Errorf("after -remove:\n%s", data)
	}
}

func TestImageBuilderBadInput(t *testing.T) {
	root := t.TempDir()
	err := run(context.Background(), []string{"-root", root, "-name", "Bad_Name", "-runtime-type", "io.containerd.x.v2"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "Bad_Name") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("wrote %v", entries)
	}
}
