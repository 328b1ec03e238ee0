package containerdconfig_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
)

// vmm is the sandbox controller the proxy plugin golden tests add, with
// every optional field set.
var vmm = containerdconfig.ProxyPlugin{
	Name:         "vmm",
	Type:         "sandbox",
	Address:      "/run/kuasar-vmm.sock",
	Platform:     "linux/amd64",
	Exports:      map[string]string{"shim": "kuasar", "io type": "streaming"},
	Capabilities: []string{"streaming-io"},
}

// kuasar is a handler whose pods the vmm sandboxer serves.
var kuasar = containerdconfig.RuntimeHandler{
	Name:        "kuasar-vmm",
	RuntimeType: "io.containerd.kuasar-vmm.v1",
	Sandboxer:   "vmm",
	IOType:      "streaming",
}

// TestProxyPluginGolden adds the vmm proxy plugin and a handler naming it
// to configs of every schema and shape, compares with golden files, checks
// that adding again changes nothing, and removes both again.
func TestProxyPluginGolden(t *testing.T) {
	edit, _ := filepath.Glob("testdata/edit/*.toml")
	own, _ := filepath.Glob("testdata/proxy/*.toml")
	inputs := append(edit, own...)
	if len(own) == 0 || len(edit) == 0 {
		t.Fatal("no inputs")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".toml")
		t.Run(name, func(t *testing.T) {
			orig, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			withPlugin, changed, err := containerdconfig.AddProxyPlugin(in, orig, vmm)
			if err != nil || !changed {
				t.Fatalf("add proxy plugin: changed=%v err=%v", changed, err)
			}
			both, changed, err := containerdconfig.AddHandler(in, withPlugin, kuasar)
			if err != nil || !changed {
				t.Fatalf("add handler: changed=%v err=%v", changed, err)
			}
			golden(t, "proxy/golden/"+name+".add.toml", both)

			cfg, err := containerdconfig.Parse(in, both)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"type": "sandbox", "address": "/run/kuasar-vmm.sock", "platform": "linux/amd64",
				"capabilities": []any{"streaming-io"},
				"exports":      map[string]any{"shim": "kuasar", "io type": "streaming"},
			}
			if diff := cmp.Diff(want, cfg.ProxyPlugin("vmm")); diff != "" {
				t.Errorf("proxy plugin as parsed (-want +got):\n%s", diff)
			}
			if h := cfg.Handler("kuasar-vmm"); h["sandboxer"] != "vmm" || h["io_type"] != "streaming" {
				t.Errorf("handler as parsed: %v", h)
			}

			again, changed, err := containerdconfig.AddProxyPlugin(in, both, vmm)
			if err != nil || changed || !bytes.Equal(again, both) {
				t.Errorf("second add: changed=%v err=%v; want a no-op", changed, err)
			}

			back, changed, err := containerdconfig.RemoveHandler(in, both, kuasar.Name)
			if err != nil || !changed {
				t.Fatalf("remove handler: changed=%v err=%v", changed, err)
			}
			if !bytes.Equal(back, withPlugin) {
				t.Errorf("removing the handler does not give back the file with the plugin:\n%s", cmp.Diff(string(withPlugin), string(back)))
			}
			back, changed, err = containerdconfig.RemoveProxyPlugin(in, back, "vmm")
			if err != nil || !changed {
				t.Fatalf("remove proxy plugin: changed=%v err=%v", changed, err)
			}
			if !bytes.Equal(back, orig) {
				t.Errorf("add then remove is not byte-identical:\n%s", cmp.Diff(string(orig), string(back)))
			}
		})
	}
}

// TestProxyPluginUpdateInPlace changes a proxy plugin shimkit added: the
// managed block is rewritten where it is, nothing else moves.
func TestProxyPluginUpdateInPlace(t *testing.T) {
	orig, err := os.ReadFile("testdata/proxy/v2-neighbour-proxy.toml")
	if err != nil {
		t.Fatal(err)
	}
	v1, _, err := containerdconfig.AddProxyPlugin("f", orig, vmm)
	if err != nil {
		t.Fatal(err)
	}
	tail := "\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"
	v1 = append(v1, tail...)
	newer := containerdconfig.ProxyPlugin{Name: "vmm", Type: "io.containerd.sandbox.controller.v1", Address: "/run/kuasar/vmm.sock"}
	v2, changed, err := containerdconfig.AddProxyPlugin("f", v1, newer)
	if err != nil || !changed {
		t.Fatalf("update: changed=%v err=%v", changed, err)
	}
	golden(t, "proxy/golden/update-in-place.toml", v2)
	if !bytes.HasSuffix(v2, []byte(tail)) {
		t.Error("the table after the managed block moved")
	}
}

// TestProxyPluginLeftToItsOwner: a proxy plugin of that name that shimkit
// did not write is never changed or removed; when it is the one asked for,
// installing it changes nothing.
func TestProxyPluginLeftToItsOwner(t *testing.T) {
	orig, err := os.ReadFile("testdata/proxy/v2-neighbour-proxy.toml")
	if err != nil {
		t.Fatal(err)
	}
	stargz := containerdconfig.ProxyPlugin{Name: "stargz", Type: "snapshot", Address: "/run/containerd-stargz-grpc/containerd-stargz-grpc.sock"}
	out, changed, err := containerdconfig.AddProxyPlugin("f", orig, stargz)
	if err != nil || changed || !bytes.Equal(out, orig) {
		t.Errorf("identical user plugin: changed=%v err=%v; want a no-op", changed, err)
	}
	out, changed, err = containerdconfig.RemoveProxyPlugin("f", orig, "stargz")
	if err != nil || changed || !bytes.Equal(out, orig) {
		t.Errorf("remove user plugin: changed=%v err=%v; want it left alone", changed, err)
	}
}

// TestProxyPluginDropIn installs the plugin and its handler through the
// Mutators on a containerd 2.x node that imports conf.d: each goes to its
// own drop-in at the root's version, and uninstalling both leaves the node
// as it was.
func TestProxyPluginDropIn(t *testing.T) {
	for _, version := range []string{"3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{
				"/etc/containerd/config.toml":         "version = " + version + "\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
				"/etc/containerd/conf.d/10-user.toml": "version = " + version + "\n[proxy_plugins.stargz]\n  type = \"snapshot\"\n  address = \"/run/stargz.sock\"\n",
			})
			before := snapshot(t, root)
			p, _ := containerdconfig.PresetNamed(containerdconfig.PresetContainerd)
			target := containerdconfig.Target{Root: root, Preset: p}
			ctx := context.Background()

			file, err := target.ProxyPluginFile("vmm")
			if err != nil || file != "/etc/containerd/conf.d/shimkit-proxy.vmm.toml" {
				t.Fatalf("ProxyPluginFile = %q, %v", file, err)
			}
			pc, err := containerdconfig.NewInstallProxyPlugin(target, vmm).Apply(ctx)
			if err != nil || !slices.Equal(pc.Files(), []string{file}) {
				t.Fatalf("install proxy plugin: %v %v", pc, err)
			}
			hc, err := containerdconfig.NewInstall(target, kuasar).Apply(ctx)
			if err != nil || !slices.Equal(hc.Files(), []string{"/etc/containerd/conf.d/shimkit-kuasar-vmm.toml"}) {
				t.Fatalf("install handler: %v %v", hc, err)
			}
			for _, c := range []*containerdconfig.Change{hc, pc} {
				if err := c.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			golden(t, "proxy/golden/dropin-v"+version+".shimkit-proxy.vmm.toml", mustRead(t, filepath.Join(root, file)))
			golden(t, "proxy/golden/dropin-v"+version+".shimkit-kuasar-vmm.toml", mustRead(t, filepath.Join(root, "/etc/containerd/conf.d/shimkit-kuasar-vmm.toml")))

			if c, err := containerdconfig.NewInstallProxyPlugin(target, vmm).Apply(ctx); err != nil || c.Changed() {
				t.Errorf("second install: changed=%v err=%v; want a no-op", c != nil && c.Changed(), err)
			}
			hc, err = containerdconfig.NewUninstall(target, kuasar.Name).Apply(ctx)
			if err != nil || !hc.Changed() {
				t.Fatalf("uninstall handler: %v", err)
			}
			pc, err = containerdconfig.NewUninstallProxyPlugin(target, "vmm").Apply(ctx)
			if err != nil || !pc.Changed() {
				t.Fatalf("uninstall proxy plugin: %v", err)
			}
			for _, c := range []*containerdconfig.Change{pc, hc} {
				if err := c.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			if after := snapshot(t, root); !slices.Equal(before, after) {
				t.Errorf("node differs after uninstall:\nbefore %q\nafter  %q", before, after)
			}
			if c, err := containerdconfig.NewUninstallProxyPlugin(target, "stargz").Apply(ctx); err != nil || c.Changed() {
				t.Errorf("uninstalling the user's plugin: changed=%v err=%v; want it left alone", c != nil && c.Changed(), err)
			}
		})
	}
}

// TestProxyPluginParsedLikeContainerd checks that ProxyPlugin's fields are
// the keys of containerd's ProxyPlugin config (cmd/containerd/server/config).
func TestProxyPluginParsedLikeContainerd(t *testing.T) {
	out, _, err := containerdconfig.AddProxyPlugin("f", nil, vmm)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := containerdconfig.Parse("f", out)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range cfg.ProxyPlugin("vmm") {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"address", "capabilities", "exports", "platform", "type"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
}
