package crioconfig

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestWriterLocate: an installer writes the handler before it switches the
// bundle into place, so the binary is checked where Locate says it is now
// (the staged file), while the drop-in names the node path it will have.
func TestWriterLocate(t *testing.T) {
	n := newNode(t)
	n.write("/opt/shimkit/x/.staging-1/v1/crun", "#!/bin/sh\n", 0o755)
	h := RuntimeHandler{Name: "crun-x", Kind: KindOCI, RuntimePath: "/opt/shimkit/x/current/crun"}
	w := NewWriter(n.tg, "x")
	if _, err := w.Install(context.Background(), h); !errors.Is(err, ErrBinary) {
		t.Fatalf("Install before the bundle is placed, without Locate: %v, want ErrBinary", err)
	}
	w.Locate = func(p string) string {
		if p == h.RuntimePath {
			return filepath.Join(n.root, "/opt/shimkit/x/.staging-1/v1/crun")
		}
		return filepath.Join(n.root, p)
	}
	c, err := w.Install(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := n.read(n.tg.DropInPath(h.Name)); string(Render("x", h)) != got {
		t.Errorf("drop-in %q, want the node path %s", got, h.RuntimePath)
	}
}
