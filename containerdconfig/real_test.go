package containerdconfig_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestRealContainerd registers a handler in each containerd's own default
// config (and in a minimal one), starts that containerd, and asks it through
// CRI whether the handler is there as written and nothing else changed; then
// removes it and checks the file is byte-identical to the original.
func TestRealContainerd(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t) {
		def := b.DefaultConfig(t)
		// The default imports /etc/containerd/conf.d; point it next to the
		// test's config file (containerd resolves relative imports there).
		def = bytes.ReplaceAll(def, []byte("'/etc/containerd/conf.d/*.toml'"), []byte("'conf.d/*.toml'"))
		cases := []struct {
			name   string
			config []byte
			mode   containerdconfig.Mode
			dropIn bool
		}{
			{"default", def, containerdconfig.ModeAuto, b.Major == 2},
			{"minimal", b.MinimalConfig(), containerdconfig.ModeAuto, false},
		}
		if b.Major == 2 {
			cases = append(cases, struct {
				name   string
				config []byte
				mode   containerdconfig.Mode
				dropIn bool
			}{"default-rootfile", def, containerdconfig.ModeFile, false})
		}
		for _, tc := range cases {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				testRealHandler(t, b, tc.config, tc.mode, tc.dropIn)
			})
		}
	}
}

func testRealHandler(t *testing.T, b testutil.ContainerdBuild, original []byte, mode containerdconfig.Mode, wantDropIn bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testutil.StartContainerd(t, b, original)
	dumpBefore, dumpOriginal := mustDump(t, c), mustDump(t, c)
	criBefore, _, err := c.CRIConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}

	h := containerdconfig.RuntimeHandler{
		Name:                         "demo",
		RuntimeType:                  "io.containerd.demo.v2",
		RuntimePath:                  "/opt/shimkit/bin/containerd-shim-demo-v2",
		Options:                      map[string]any{"ConfigPath": "/etc/demo/config.toml"},
		PodAnnotations:               []string{"demo.shimkit.dev/*"},
		PrivilegedWithoutHostDevices: true,
	}
	target := containerdconfig.Target{Root: "/", Preset: containerdconfig.Preset{Name: containerdconfig.PresetContainerd, Config: c.ConfigPath}, Mode: mode}
	change, err := containerdconfig.NewInstall(target, h).Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !change.Changed() {
		t.Fatal("install reported no change")
	}
	dropIn := filepath.Join(c.Dir, "conf.d", "shimkit-demo.toml")
	if got := slices.Equal(change.Files(), []string{dropIn}); got != wantDropIn {
		t.Fatalf("changed %v; want drop-in %v", change.Files(), wantDropIn)
	}
	if err := change.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	cfg, handlers, err := c.CRIConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runtimes, _ := cfg["containerd"].(map[string]any)["runtimes"].(map[string]any)
	demo, ok := runtimes["demo"].(map[string]any)
	if !ok {
		t.Fatalf("CRI does not report handler demo; runtimes: %v\n%s", keys(runtimes), c.LogTail())
	}
	want := map[string]any{
		"runtimeType":                     "io.containerd.demo.v2",
		"runtimePath":                     "/opt/shimkit/bin/containerd-shim-demo-v2",
		"PodAnnotations":                  []any{"demo.shimkit.dev/*"},
		"privileged_without_host_devices": true,
	}
	for k, v := range want {
		if !reflect.DeepEqual(demo[k], v) {
			t.Errorf("CRI reports demo.%s = %v, want %v", k, demo[k], v)
		}
	}
	if opts, _ := demo["options"].(map[string]any); opts["ConfigPath"] != "/etc/demo/config.toml" {
		t.Errorf("CRI reports demo.options = %v", demo["options"])
	}
	if _, ok := runtimes["runc"]; !ok {
		t.Errorf("runc is gone; runtimes: %v", keys(runtimes))
	}
	if b.Major == 2 && !slices.Contains(handlers, "demo") {
		t.Errorf("runtimeHandlers = %v, want demo", handlers)
	}

	// Everything but the new handler is as before.
	dumpAfter := mustDump(t, c)
	deleteHandler(dumpAfter, "demo")
	if keeper := bytes.Contains(mustRead(t, c.ConfigPath), []byte(`default runtime "runc"`)); keeper {
		// containerd 1.x drops its built-in runc once a config defines any
		// runtime; shimkit then defines runc itself. The dump shows the
		// table as written, so compare what CRI runs instead.
		deleteHandler(dumpAfter, "runc")
		deleteHandler(dumpBefore, "runc")
		runcBefore := criBefore["containerd"].(map[string]any)["runtimes"].(map[string]any)["runc"]
		if diff := cmp.Diff(runcBefore, runtimes["runc"]); diff != "" {
			t.Errorf("CRI runs runc differently (-built-in +kept):\n%s", diff)
		}
	}
	if diff := cmp.Diff(dumpBefore, dumpAfter); diff != "" {
		t.Errorf("config dump changed beyond the handler (-before +after):\n%s", diff)
	}

	change, err = containerdconfig.NewUninstall(target, "demo").Apply(ctx)
	if err != nil || !change.Changed() {
		t.Fatalf("uninstall: changed=%v err=%v", change != nil && change.Changed(), err)
	}
	if err := change.Commit(); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, c.ConfigPath)
	if !bytes.Equal(got, original) {
		t.Errorf("config after uninstall differs from the original:\n%s", cmp.Diff(string(original), string(got)))
	}
	if _, err := os.Stat(dropIn); !os.IsNotExist(err) {
		t.Errorf("drop-in still there after uninstall: %v", err)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dumpOriginal, mustDump(t, c)); diff != "" {
		t.Errorf("config dump after uninstall differs (-before +after):\n%s", diff)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustDump(t *testing.T, c *testutil.Containerd) map[string]any {
	t.Helper()
	out, err := c.ConfigDump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := toml.Unmarshal(out, &m); err != nil {
		t.Fatalf("config dump does not parse: %v", err)
	}
	return m
}

// runtimesOf returns the runtimes table of a config dump, whatever the
// schema.
func runtimesOf(dump map[string]any) map[string]any {
	plugins, _ := dump["plugins"].(map[string]any)
	for _, id := range []string{"io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri"} {
		if p, ok := plugins[id].(map[string]any); ok {
			if ctr, ok := p["containerd"].(map[string]any); ok {
				if rt, ok := ctr["runtimes"].(map[string]any); ok {
					return rt
				}
			}
		}
	}
	return nil
}

func deleteHandler(dump map[string]any, name string) { delete(runtimesOf(dump), name) }

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
