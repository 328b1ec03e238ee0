package installer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/internal/testutil"
)

// k3sCase is one k3s or RKE2 generation of the stand-in (k3snode.go).
type k3sCase struct {
	name      string
	build     testutil.ContainerdBuild
	opts      testutil.NodeOptions
	unit      string
	configDir string
	// dropIn: the rendered config imports config-v3.toml.d, so the handler
	// goes to a drop-in there; otherwise to the template.
	dropIn   bool
	template string
}

func k3sCases(t *testing.T) []k3sCase {
	m := testutil.ContainerdMatrix(t)
	b17, b22 := m[1], m[2]
	return []k3sCase{
		{name: "k3s", build: b22, opts: testutil.NodeOptions{K3s: true}, unit: testutil.K3sUnit, configDir: testutil.K3sConfigDir, dropIn: true},
		{name: "k3s-before-imports", build: b22, opts: testutil.NodeOptions{K3s: true, K3sOld: true}, unit: testutil.K3sUnit, configDir: testutil.K3sConfigDir, template: "config-v3.toml.tmpl"},
		{name: "k3s-containerd1.7", build: b17, opts: testutil.NodeOptions{K3s: true}, unit: testutil.K3sUnit, configDir: testutil.K3sConfigDir, template: "config.toml.tmpl"},
		{name: "rke2-agent", build: b22, opts: testutil.NodeOptions{RKE2: true}, unit: testutil.RKE2Unit, configDir: testutil.RKE2ConfigDir, dropIn: true},
	}
}

func (c k3sCase) boot(t *testing.T) *testutil.Node {
	t.Helper()
	c.opts.Containerd = &c.build
	n := testutil.StartNode(t, c.opts)
	testutil.ImportPause(t, "/usr/bin/ctr", n.Socket())
	return n
}

// TestK3sStyleNode: on nodes laid out as each k3s and RKE2 generation lays
// them out (containerd in the agent's unit, its config rendered by Go
// text/template at each start), the installer detects the layout, writes a
// drop-in where the rendered config imports config-v3.toml.d and otherwise
// a template that keeps {{ template "base" . }}, restarts the unit that
// runs containerd (on an RKE2 agent installed from the tarball
// rke2-agent, never the loaded rke2-server) once, and a sandbox runs with
// the handler; the uninstall, in one run, leaves the config directory
// byte for byte as it was, the drop-in directory shimkit created included.
func TestK3sStyleNode(t *testing.T) {
	for _, c := range k3sCases(t) {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := c.boot(t)
			before := testutil.Tree(t, n.Local(c.configDir))
			inst := &installer.Installer{HostRoot: n.Root} // every default: the layout detected
			srv := testutil.StartFileServer(t)
			a := testutil.NewShimArchive(t, "demo", c.build.Binary("containerd-shim-runc-v2"), nil)
			starts := n.ContainerdStarts(t)

			res, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a))
			if err != nil {
				t.Fatalf("install: %v\n%s", err, n.Journal(c.unit))
			}
			if got := n.ContainerdStarts(t); !res.Restarted || got != starts+1 {
				t.Errorf("install: restarted %v, %s started %d times (was %d), want one restart", res.Restarted, c.unit, got, starts)
			}
			if c.opts.RKE2 {
				assertNeverStarted(t, n, testutil.RKE2Server)
			}
			dropIn := n.Local(c.configDir + "/config-v3.toml.d/shimkit-demo.toml")
			if c.dropIn {
				if !exists(dropIn) || exists(n.Local(c.configDir+"/config-v3.toml.tmpl")) {
					t.Errorf("want the drop-in %s and no template", dropIn)
				}
			} else {
				data, err := os.ReadFile(n.Local(c.configDir + "/" + c.template))
				if err != nil || !bytes.Contains(data, []byte("{{ template \"base\" . }}\n")) || !bytes.Contains(data, []byte("demo")) || exists(dropIn) {
					t.Errorf("the template %s: %v\n%s", c.template, err, data)
				}
			}
			rt := runtimeClient(t, n.Socket())
			if _, exe, err := testutil.RunSandbox(ctx, rt, "demo", "k3s"); err != nil {
				t.Fatalf("%v\n%s", err, n.Journal(c.unit))
			} else if !strings.HasPrefix(exe, "/opt/shimkit/demo/") {
				t.Errorf("the sandbox runs %s", exe)
			}
			removeSandboxes(ctx, t, rt)

			starts = n.ContainerdStarts(t)
			if res, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil || !res.Restarted {
				t.Fatalf("uninstall: %+v %v\n%s", res, err, n.Journal(c.unit))
			}
			if got := n.ContainerdStarts(t); got != starts+1 {
				t.Errorf("uninstall: %s started %d times (was %d), want one restart", c.unit, got, starts)
			}
			if after := testutil.Tree(t, n.Local(c.configDir)); !maps.Equal(before, after) {
				t.Errorf("%s after the uninstall:\n%v\nwant\n%v", c.configDir, slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
			}
			if c.opts.RKE2 {
				assertNeverStarted(t, n, testutil.RKE2Server)
			}
			assertClean(t, n)
		})
	}
}

// TestK3sDetectedShim: k3s finds runtimes it knows (spin, wasmtime, ...)
// on its PATH and renders a runtime table of its own for each. A Spin shim
// (containerd-shim-spin-v2) installs on both k3s generations, without a
// link on k3s's PATH: where the handler goes to a template (k3s without
// the config-v3.toml.d import) k3s would otherwise render the spin table a
// second time and containerd refuse the config. The handler survives a
// restart of k3s-agent, and the uninstall leaves the config directory as
// it was.
func TestK3sDetectedShim(t *testing.T) {
	for _, c := range k3sCases(t)[:2] {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := c.boot(t)
			before := testutil.Tree(t, n.Local(c.configDir))
			inst := installSpin(ctx, t, c, n)
			if exists(n.Local("/usr/local/bin/containerd-shim-spin-v2")) {
				t.Error("the shim is linked onto k3s's PATH")
			}
			rt := runtimeClient(t, n.Socket())
			runSpin := func(name string) {
				t.Helper()
				if _, exe, err := testutil.RunSandbox(ctx, rt, "spin", name); err != nil {
					t.Fatalf("%v\n%s", err, n.Journal(c.unit))
				} else if !strings.HasPrefix(exe, "/opt/shimkit/spin/") {
					t.Errorf("the sandbox runs %s", exe)
				}
				removeSandboxes(ctx, t, rt)
			}
			runSpin("before")
			if out, err := n.Exec(ctx, "systemctl", "restart", c.unit); err != nil {
				t.Fatalf("restart %s: %v %s\n%s", c.unit, err, out, n.Journal(c.unit))
			}
			waitCRI(ctx, t, rt)
			runSpin("after")
			if _, err := inst.Uninstall(ctx, uninstallPlan("spin")); err != nil {
				t.Fatalf("uninstall: %v\n%s", err, n.Journal(c.unit))
			}
			if after := testutil.Tree(t, n.Local(c.configDir)); !maps.Equal(before, after) {
				t.Errorf("%s after the uninstall:\n%v\nwant\n%v", c.configDir, slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
			}
		})
	}
}

func waitCRI(ctx context.Context, t *testing.T, rt runtimeapi.RuntimeServiceClient) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
		if err == nil && st.GetStatus() != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRI did not answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertNeverStarted: systemd never started the unit (no start job, no
// "Started" line).
func assertNeverStarted(t *testing.T, n *testutil.Node, unit string) {
	t.Helper()
	out, _ := n.Exec(context.Background(), "systemctl", "show", "-p", "ActiveState", "-p", "NRestarts", "-p", "ExecMainStartTimestampMonotonic", unit)
	if !strings.Contains(string(out), "ActiveState=inactive") || !strings.Contains(string(out), "ExecMainStartTimestampMonotonic=0") {
		t.Errorf("%s was started:\n%s\n%s", unit, out, n.Journal(unit))
	}
}

// TestK3sTemplateBraces: a value holding "{{" goes into the template of a
// k3s without the config-v3.toml.d import escaped for text/template: the
// agent renders the template, containerd starts, and the rendered config
// holds the value exactly; a sandbox runs with the handler.
func TestK3sTemplateBraces(t *testing.T) {
	c := k3sCases(t)[1]
	ctx := context.Background()
	n := c.boot(t)
	inst := &installer.Installer{HostRoot: n.Root}
	srv := testutil.StartFileServer(t)
	a := testutil.NewShimArchive(t, "demo", c.build.Binary("containerd-shim-runc-v2"), nil)
	p := httpPlan(srv, "/demo.tar.gz", a)
	const ann = "example.com/{{node}}"
	p.Handlers[0].PodAnnotations = []string{ann}
	if _, err := inst.Install(ctx, rehash(p)); err != nil {
		t.Fatalf("install: %v\n%s", err, n.Journal(c.unit))
	}
	data, err := os.ReadFile(n.Local(c.configDir + "/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := containerdconfig.Parse("config.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := cfg.Handler("demo")["pod_annotations"].([]any); len(got) != 1 || got[0] != ann {
		t.Errorf("rendered pod_annotations = %#v, want [%q]", cfg.Handler("demo")["pod_annotations"], ann)
	}
	rt := runtimeClient(t, n.Socket())
	if _, _, err := testutil.RunSandbox(ctx, rt, "demo", "braces"); err != nil {
		t.Fatalf("%v\n%s", err, n.Journal(c.unit))
	}
	removeSandboxes(ctx, t, rt)
	if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
}

// TestK3sUninstallRepairsDoubleTable: a node an older shimkit left broken
// (Spin's handler in the template of a k3s without the import, and the
// shim linked onto k3s's PATH: k3s renders the spin table twice and
// containerd refuses the config) is repaired by the uninstall: the
// rendered config does not parse, but shimkit's block comes out of the
// template, k3s-agent starts again, and the link goes.
func TestK3sUninstallRepairsDoubleTable(t *testing.T) {
	c := k3sCases(t)[1]
	ctx := context.Background()
	n := c.boot(t)
	before := testutil.Tree(t, n.Local(c.configDir))
	inst := installSpin(ctx, t, c, n)
	// What an older shimkit did: link the shim onto k3s's PATH, recorded.
	const link = "/usr/local/bin/containerd-shim-spin-v2"
	if err := os.Symlink("/opt/shimkit/spin/current/containerd-shim-spin-v2", n.Local(link)); err != nil {
		t.Fatal(err)
	}
	statePath := n.Local("/var/lib/shimkit/state.json")
	var st map[string]any
	data, err := os.ReadFile(statePath)
	if err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("state: %v", err)
	}
	st["shims"].(map[string]any)["spin"].(map[string]any)["links"] = []string{link}
	if data, err = json.Marshal(st); err != nil || os.WriteFile(statePath, data, 0o644) != nil {
		t.Fatal(err)
	}
	if out, err := n.Exec(ctx, "systemctl", "restart", c.unit); err == nil {
		t.Fatalf("k3s-agent started with the spin table twice: %s", out)
	}
	if _, err := inst.Uninstall(ctx, uninstallPlan("spin")); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, n.Journal(c.unit))
	}
	if exists(n.Local(link)) {
		t.Error("the link is left")
	}
	if out, err := n.Exec(ctx, "systemctl", "restart", c.unit); err != nil {
		t.Fatalf("restart: %v %s\n%s", err, out, n.Journal(c.unit))
	}
	if after := testutil.Tree(t, n.Local(c.configDir)); !maps.Equal(before, after) {
		t.Errorf("%s after the uninstall:\n%v\nwant\n%v", c.configDir, after, before)
	}
}

// installSpin installs a Spin-named shim (the runc shim of the node's
// containerd build) on the k3s-style node, as k3s would detect it.
func installSpin(ctx context.Context, t *testing.T, c k3sCase, n *testutil.Node) *installer.Installer {
	t.Helper()
	inst := &installer.Installer{HostRoot: n.Root}
	srv := testutil.StartFileServer(t)
	a := testutil.NewShimArchive(t, "spin", c.build.Binary("containerd-shim-runc-v2"), nil)
	if _, err := inst.Install(ctx, namedHTTPPlan("spin", srv, "/spin.tar.gz", a)); err != nil {
		t.Fatalf("install: %v\n%s", err, n.Journal(c.unit))
	}
	return inst
}
