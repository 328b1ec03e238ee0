package crioconfig

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestDetect(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(root string)
		evidence string
	}{
		{"containerd node", func(root string) { mkdirAll(t, root, "/etc/containerd") }, ""},
		{"drop-in directory only", func(root string) { mkdirAll(t, root, "/etc/crio/crio.conf.d") }, "/etc/crio/crio.conf.d"},
		{"config file", func(root string) {
			mkdirAll(t, root, "/etc/crio")
			if err := os.WriteFile(filepath.Join(root, "etc/crio/crio.conf"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "/etc/crio/crio.conf"},
		{"socket", func(root string) {
			mkdirAll(t, root, "/var/run/crio")
			l, err := net.Listen("unix", filepath.Join(root, "var/run/crio/crio.sock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}, "/var/run/crio/crio.sock"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, err := os.MkdirTemp("", "node-") // a socket path must stay short
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(root) })
			c.setup(root)
			found, evidence, err := Detect(root)
			if err != nil || found != (c.evidence != "") || evidence != c.evidence {
				t.Fatalf("Detect = %v, %q, %v; want evidence %q", found, evidence, err, c.evidence)
			}
		})
	}
}

func mkdirAll(t *testing.T, root, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}
