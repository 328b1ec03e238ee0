package installer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// userHandlerV2 is a config with a handler an admin wrote by hand.
const userHandlerV2 = `version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
  runtime_type = "io.containerd.runsc.v1"
`

// defaultCrunV2 is a config whose default runtime is crun.
const defaultCrunV2 = `version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "crun"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
    BinaryName = "/usr/bin/crun"
`

// TestOwnershipRefusals: an install that would take over, shadow or
// overwrite what is not this Shim's is refused before anything on the node
// changes, with a reason constant and a message that names the handler,
// file or Shim.
func TestOwnershipRefusals(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	for _, tc := range []struct {
		name   string
		config string
		setup  func(t *testing.T, n *fakeNode)
		edit   func(p *plan.NodePlan)
		reason plan.Reason
		says   []string
	}{
		{name: "runc handler", edit: func(p *plan.NodePlan) { p.Handlers[0].Name = "runc" },
			reason: plan.ReasonReserved, says: []string{`handler "runc"`}},
		{name: "default runtime", config: defaultCrunV2, edit: func(p *plan.NodePlan) { p.Handlers[0].Name = "crun" },
			reason: plan.ReasonReserved, says: []string{`handler "crun"`, "default runtime", "/etc/containerd/config.toml"}},
		{name: "runc runtime type", edit: func(p *plan.NodePlan) { p.Handlers[0].RuntimeType = "io.containerd.runc.v2" },
			reason: plan.ReasonReserved, says: []string{"io.containerd.runc.v2", "BinaryName"}},
		{name: "runhcs runtime type", edit: func(p *plan.NodePlan) { p.Handlers[0].RuntimeType = "io.containerd.runhcs.v1" },
			reason: plan.ReasonReserved, says: []string{"io.containerd.runhcs.v1"}},
		{name: "admin's handler", config: userHandlerV2,
			reason: plan.ReasonConflict, says: []string{`handler "runsc"`, "/etc/containerd/config.toml", "adopt"}},
		{name: "another Shim's handler", setup: func(t *testing.T, n *fakeNode) {
			other := gvisorLikePlan(t, srv, "v1")
			other.Shim = plan.ShimRef{Name: "gvisor-old", UID: "uid-old"}
			if _, err := n.installer().Install(ctx, rehash(other)); err != nil {
				t.Fatal(err)
			}
		}, reason: plan.ReasonConflict, says: []string{`handler "runsc"`, "Shim gvisor-old"}},
		{name: "name taken on PATH", setup: func(t *testing.T, n *fakeNode) {
			writeFile(t, n.local("/usr/bin/containerd-shim-runsc-v1"), "an admin's shim")
		}, reason: plan.ReasonConflict, says: []string{"/usr/bin/containerd-shim-runsc-v1", "PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t, orDefault(tc.config, "version = 2\n"))
			if tc.setup != nil {
				tc.setup(t, n)
			}
			before := snapshot(t, n.root)
			p := gvisorLikePlan(t, srv, "v1")
			if tc.edit != nil {
				tc.edit(p)
			}
			res, err := n.installer().Install(ctx, rehash(p))
			r := installer.Report(p, res, err)
			if r.Outcome != plan.Failed || r.Reason != tc.reason {
				t.Fatalf("result %s/%s %q, want Failed/%s", r.Outcome, r.Reason, r.Message, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(r.Message, s) {
					t.Errorf("message %q does not say %q", r.Message, s)
				}
			}
			if after := snapshot(t, n.root); after != before {
				t.Errorf("node changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestUnitOwnership: a unit file of that name that shimkit did not write is
// refused; one shimkit wrote and an admin then edited is neither
// overwritten by an upgrade nor deleted by uninstall.
func TestUnitOwnership(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	unit := "/etc/systemd/system/shimkit-vmm.service"

	t.Run("foreign unit", func(t *testing.T) {
		n := newFakeNode(t, "version = 3\n")
		writeFile(t, n.local(unit), "[Service]\nExecStart=/usr/bin/admins-daemon\n")
		before := snapshot(t, n.root)
		p := sandboxerPlan(t, srv, "vmm", "/bin/true")
		res, err := n.installer().Install(ctx, p)
		if r := installer.Report(p, res, err); r.Reason != plan.ReasonConflict || !strings.Contains(r.Message, unit) {
			t.Fatalf("result %s/%s %q, want Conflict naming %s", r.Outcome, r.Reason, r.Message, unit)
		}
		if after := snapshot(t, n.root); after != before {
			t.Errorf("node changed:\n%s", after)
		}
	})

	t.Run("edited after install", func(t *testing.T) {
		n := newFakeNode(t, "version = 3\n")
		stop := serveSocket(t, n.local("/run/shimkit/vmm.sock"))
		defer stop()
		inst := n.installer()
		if _, err := inst.Install(ctx, sandboxerPlan(t, srv, "vmm", "/bin/true")); err != nil {
			t.Fatal(err)
		}
		edited := "# tuned by the admin\n"
		data, _ := os.ReadFile(n.local(unit))
		writeFile(t, n.local(unit), edited+string(data))
		before := snapshot(t, n.root)
		if st, err := inst.Status(ctx); err != nil || len(st) != 1 || len(st[0].Problems) != 1 || !strings.Contains(st[0].Problems[0], "changed after shimkit wrote it") {
			t.Errorf("status: %+v %v", st, err)
		}

		upgrade := sandboxerPlan(t, srv, "vmm", "/bin/true", "--verbose")
		res, err := inst.Install(ctx, upgrade)
		if r := installer.Report(upgrade, res, err); r.Reason != plan.ReasonConflict || !strings.Contains(r.Message, "changed after shimkit wrote it") {
			t.Errorf("upgrade: %s/%s %q, want Conflict", r.Outcome, r.Reason, r.Message)
		}
		res, err = inst.Uninstall(ctx, uninstallPlan("vmm"))
		if r := installer.Report(uninstallPlan("vmm"), res, err); r.Reason != plan.ReasonConflict || !strings.Contains(r.Message, unit) {
			t.Errorf("uninstall: %s/%s %q, want Conflict", r.Outcome, r.Reason, r.Message)
		}
		if after := snapshot(t, n.root); after != before {
			t.Errorf("node changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// snapshot lists every file under root (or under the node paths dirs)
// with its content, for comparing a node before and after.
func snapshot(t *testing.T, root string, dirs ...string) string {
	t.Helper()
	if len(dirs) == 0 {
		dirs = []string{"/"}
	}
	var b strings.Builder
	for _, d := range dirs {
		walkInto(t, &b, root, filepath.Join(root, d))
	}
	return b.String()
}

func walkInto(t *testing.T, b *strings.Builder, root, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, "var/lib/shimkit/cache") || rel == "var/lib/shimkit/lock" {
			return nil // the artifact cache and the lock file are not the node's state
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(rel + " -> " + target + "\n")
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			if len(data) > 4096 || bytes.IndexByte(data, 0) >= 0 {
				sum := sha256.Sum256(data)
				fmt.Fprintf(b, "%s: %d bytes, sha256 %x\n", rel, len(data), sum)
				break
			}
			b.WriteString(rel + ": " + string(bytes.TrimSpace(data)) + "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serveSocket listens on a unix socket, as the sandboxer daemon a fake unit
// does not run would.
func serveSocket(t *testing.T, p string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	return func() { _ = l.Close() }
}

// TestAdoptedHandlerIsPutBack: a plan that adopts the admin's handler takes
// it over, and uninstall puts the admin's text back byte for byte.
func TestAdoptedHandlerIsPutBack(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, userHandlerV2)
	inst := n.installer()
	p := gvisorLikePlan(t, testutil.StartFileServer(t), "v1")
	p.Handlers[0].Adopt = true
	if _, err := inst.Install(ctx, rehash(p)); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(n.config)
	if !bytes.Contains(cfg, []byte(`runtime_path = "/opt/shimkit/gvisor/current/containerd-shim-runsc-v1"`)) {
		t.Errorf("handler not taken over:\n%s", cfg)
	}
	if _, err := inst.Uninstall(ctx, uninstallPlan("gvisor")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(n.config); string(got) != userHandlerV2 {
		t.Errorf("config after uninstall:\n%s\nwant the admin's:\n%s", got, userHandlerV2)
	}
}
