package containerdconfig_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/sandboxer"
)

// TestRealProxyPlugin registers a sandbox controller (the fake sandboxer
// daemon) as a proxy plugin and a handler whose sandboxer it is, on each
// containerd 2.x, in its default config (drop-ins) and a minimal one (the
// root file). It proves with `containerd config dump`, CRI's config and
// `ctr plugins ls` that containerd loaded both, runs a pod sandbox on the
// handler and checks that CRI handed it to the daemon, then removes both
// and checks the config is byte-identical to before.
func TestRealProxyPlugin(t *testing.T) {
	var builds []testutil.ContainerdBuild
	for _, b := range testutil.ContainerdMatrix(t) {
		if b.Major == 2 { // sandbox proxy plugins and sandboxer came with containerd 2.0
			builds = append(builds, b)
		}
	}
	bin := sandboxer.Build(t)
	for _, b := range builds {
		def := bytes.ReplaceAll(b.DefaultConfig(t), []byte("'/etc/containerd/conf.d/*.toml'"), []byte("'conf.d/*.toml'"))
		// containerd 2.3 wants the sandbox image even for a pod another
		// sandboxer runs; pin the one the test imports (nothing is pulled).
		def = pinnedSandbox.ReplaceAll(def, []byte("sandbox = '"+testutil.PauseImageRef+"'"))
		for _, tc := range []struct {
			name   string
			config []byte
			dropIn bool
		}{
			{"default", def, true},
			{"minimal", b.MinimalConfig(), false},
		} {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) { testRealProxyPlugin(t, b, bin, tc.config, tc.dropIn) })
		}
	}
}

func testRealProxyPlugin(t *testing.T, b testutil.ContainerdBuild, bin string, original []byte, wantDropIn bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Started before containerd, so that it outlives containerd's cleanup,
	// which stops and removes pod sandboxes through it.
	sockDir, err := os.MkdirTemp("", "sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	daemon := sandboxer.Start(t, bin, filepath.Join(sockDir, "fakevmm.sock"))
	c := testutil.StartContainerd(t, b, original)
	c.ImportPause(t)
	dumpOriginal := mustDump(t, c)

	plugin := containerdconfig.ProxyPlugin{Name: "fakevmm", Type: "sandbox", Address: daemon.Socket}
	handler := containerdconfig.RuntimeHandler{Name: "fakevmm-rt", RuntimeType: "io.containerd.fakevmm.v1", Sandboxer: "fakevmm", IOType: "streaming"}
	target := containerdconfig.Target{Root: "/", Preset: containerdconfig.Preset{Name: containerdconfig.PresetContainerd, Config: c.ConfigPath}}
	pc, err := containerdconfig.NewInstallProxyPlugin(target, plugin).Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := containerdconfig.NewInstall(target, handler).Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxyFile, handlerFile := c.ConfigPath, c.ConfigPath
	if wantDropIn {
		proxyFile, handlerFile = filepath.Join(c.Dir, "conf.d", "shimkit-proxy.fakevmm.toml"), filepath.Join(c.Dir, "conf.d", "shimkit-fakevmm-rt.toml")
	}
	if !slices.Equal(pc.Files(), []string{proxyFile}) || !slices.Equal(hc.Files(), []string{handlerFile}) {
		t.Fatalf("changed %v and %v; want %s and %s", pc.Files(), hc.Files(), proxyFile, handlerFile)
	}
	for _, ch := range []*containerdconfig.Change{hc, pc} {
		if err := ch.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	// config dump: the effective config has both, as written.
	dump := mustDump(t, c)
	pp, _ := dump["proxy_plugins"].(map[string]any)
	if got, _ := pp["fakevmm"].(map[string]any); got["type"] != "sandbox" || got["address"] != daemon.Socket {
		t.Errorf("config dump proxy_plugins.fakevmm = %v", pp["fakevmm"])
	}
	if rt, _ := runtimesOf(dump)["fakevmm-rt"].(map[string]any); rt["sandboxer"] != "fakevmm" || rt["io_type"] != "streaming" {
		t.Errorf("config dump runtimes.fakevmm-rt = %v", rt)
	}
	// CRI's own view of the handler.
	cri, _, err := c.CRIConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	criRT, _ := cri["containerd"].(map[string]any)["runtimes"].(map[string]any)["fakevmm-rt"].(map[string]any)
	if criRT["sandboxer"] != "fakevmm" || criRT["io_type"] != "streaming" {
		t.Errorf("CRI reports fakevmm-rt = %v", criRT)
	}
	// The plugin list: the proxy sandbox controller is loaded.
	out, err := exec.CommandContext(ctx, b.Binary("ctr"), "--address", c.Socket, "plugins", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr plugins ls: %v\n%s", err, out)
	}
	if line := pluginLine(out, "io.containerd.sandbox.controller.v1", "fakevmm"); !strings.HasSuffix(line, " ok") {
		t.Errorf("ctr plugins ls has no ok sandbox controller fakevmm (line %q):\n%s", line, out)
	} else {
		t.Logf("ctr plugins ls: %s", line)
	}

	// CRI routes the handler's pod sandboxes to the daemon.
	rt := c.Runtime(t)
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{RuntimeHandler: handler.Name, Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "fakevmm-pod", Namespace: "default", Uid: "fakevmm-pod-uid"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}})
	if err != nil {
		t.Fatalf("RunPodSandbox on %s: %v\n%s", handler.Name, err, c.LogTail())
	}
	id := sb.GetPodSandboxId()
	if st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id}); err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("PodSandboxStatus: %v %v", st.GetStatus().GetState(), err)
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Errorf("StopPodSandbox: %v", err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Errorf("RemovePodSandbox: %v", err)
	}
	calls, err := daemon.Calls()
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, call := range calls {
		if call.SandboxID == id {
			methods = append(methods, call.Method)
			if call.Sandboxer != "fakevmm" {
				t.Errorf("call %s names sandboxer %q", call.Method, call.Sandboxer)
			}
		}
	}
	t.Logf("the fake sandboxer got for sandbox %s: %v", id, methods)
	for _, m := range []string{"Create", "Start", "Stop", "Shutdown"} {
		if !slices.Contains(methods, m) {
			t.Errorf("the fake sandboxer got no %s for the pod sandbox; calls: %v", m, calls)
		}
	}

	// Remove both: the config is the original, byte for byte.
	hc, err = containerdconfig.NewUninstall(target, handler.Name).Apply(ctx)
	if err != nil || !hc.Changed() {
		t.Fatalf("uninstall handler: %v", err)
	}
	pc, err = containerdconfig.NewUninstallProxyPlugin(target, plugin.Name).Apply(ctx)
	if err != nil || !pc.Changed() {
		t.Fatalf("uninstall proxy plugin: %v", err)
	}
	for _, ch := range []*containerdconfig.Change{pc, hc} {
		if err := ch.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustRead(t, c.ConfigPath); !bytes.Equal(got, original) {
		t.Errorf("config after uninstall differs from the original:\n%s", cmp.Diff(string(original), string(got)))
	}
	for _, f := range []string{proxyFile, handlerFile} {
		if _, err := os.Stat(f); f != c.ConfigPath && !os.IsNotExist(err) {
			t.Errorf("drop-in %s still there after uninstall: %v", f, err)
		}
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dumpOriginal, mustDump(t, c)); diff != "" {
		t.Errorf("config dump after uninstall differs (-before +after):\n%s", diff)
	}
}

var pinnedSandbox = regexp.MustCompile(`sandbox = 'registry\.k8s\.io/pause:[^']*'`)

// pluginLine returns the line of `ctr plugins ls` for a plugin, with its
// columns joined by single spaces.
func pluginLine(out []byte, typ, id string) string {
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == typ && f[1] == id {
			return strings.Join(f, " ")
		}
	}
	return ""
}
