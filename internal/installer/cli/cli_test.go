package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/cli"
	"github.com/shimkit/shimkit/internal/testutil"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writePlan encodes p into a file.
func writePlan(t *testing.T, p *plan.NodePlan) string {
	t.Helper()
	data, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func readResult(t *testing.T, f string) *plan.NodeResult {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := plan.DecodeResult(data)
	if err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return r
}

func rootfs(t *testing.T, config string) (root, cfg string) {
	t.Helper()
	root = t.TempDir()
	cfg = filepath.Join(root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, cfg
}

func demoPlan(t *testing.T) *plan.NodePlan {
	a := testutil.NewShimArchive(t, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	art := filepath.Join(t.TempDir(), "demo.tar.gz")
	if err := os.WriteFile(art, a.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := plan.New(plan.ShimRef{Name: "demo", UID: "uid-1"}, plan.OpInstall)
	p.SpecHash = "h1"
	p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: art, Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-demo-v2", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "demo", RuntimeType: "io.containerd.demo.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-demo-v2",
		Options: map[string]any{"ConfigPath": "/etc/demo.toml", "Threads": int64(4)}}}
	return p
}

// TestOfflineInstallIntoRootfs carries out a plan from a file into a root
// filesystem, as an image build does, writes the typed result, reports
// status, then uninstalls by name.
func TestOfflineInstallIntoRootfs(t *testing.T) {
	const orig = "version = 2\n"
	root, cfg := rootfs(t, orig)
	result := filepath.Join(t.TempDir(), "result.json")
	code, out, errOut := run(t, "install", "--plan", writePlan(t, demoPlan(t)), "--result", result, "--host-root", root, "--offline", "--log-format", "text")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "✓ placed") || !strings.Contains(out, "install demo: done") {
		t.Errorf("progress output:\n%s", out)
	}
	if r := readResult(t, result); r.Outcome != plan.Succeeded || !strings.HasPrefix(r.Digest, "sha256:") || len(r.Files) != 1 || !r.Changed {
		t.Errorf("result: %+v", r)
	}
	data, _ := os.ReadFile(cfg)
	c, err := containerdconfig.Parse(cfg, data)
	if err != nil || !c.HasHandler("demo") {
		t.Fatalf("handler not registered: %v\n%s", err, data)
	}
	h := c.Handler("demo")
	if h["runtime_path"] != "/opt/shimkit/demo/current/containerd-shim-demo-v2" || h["options"].(map[string]any)["Threads"] != int64(4) {
		t.Errorf("handler = %v", h)
	}
	if fi, err := os.Stat(filepath.Join(root, "opt/shimkit/demo/current/containerd-shim-demo-v2")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("binary: %v %v", fi, err)
	}

	code, out, _ = run(t, "status", "--host-root", root)
	var st []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0]["Problems"] != nil {
		t.Errorf("status exit %d: %s", code, out)
	}

	code, out, errOut = run(t, "uninstall", "--shim", "demo", "--host-root", root, "--offline", "--log-format", "json", "--result", result)
	if code != cli.ExitOK || !strings.Contains(out, `"msg":"removed"`) {
		t.Fatalf("uninstall exit %d: %s %s", code, out, errOut)
	}
	if r := readResult(t, result); r.Outcome != plan.Succeeded || r.Operation != plan.OpUninstall {
		t.Errorf("uninstall result: %+v", r)
	}
	if data, _ := os.ReadFile(cfg); string(data) != orig {
		t.Errorf("config after uninstall: %q", data)
	}
}

// TestExitCodesAndResults: every failure has its exit code and a typed
// result with its reason.
func TestExitCodesAndResults(t *testing.T) {
	if code, _, _ := run(t); code != cli.ExitUsage {
		t.Errorf("no command: %d", code)
	}
	result := filepath.Join(t.TempDir(), "result.json")
	if code, _, _ := run(t, "install", "--result", result); code != cli.ExitUsage || readResult(t, result).Reason != plan.ReasonInvalidPlan {
		t.Errorf("install without --plan: %d", code)
	}
	other := filepath.Join(t.TempDir(), "plan.json")
	_ = os.WriteFile(other, []byte(`{"apiVersion":"installer.shimkit.dev/v9","kind":"NodePlan"}`), 0o644)
	code, _, errOut := run(t, "install", "--plan", other, "--result", result)
	if r := readResult(t, result); code != cli.ExitUsage || r.Outcome != plan.Failed || r.Reason != plan.ReasonInvalidPlan || !strings.Contains(errOut, "installer.shimkit.dev/v9") {
		t.Errorf("plan of another version: exit %d, %+v, %s", code, r, errOut)
	}
	uninstall := writePlan(t, plan.New(plan.ShimRef{Name: "demo"}, plan.OpUninstall))
	if code, _, _ := run(t, "install", "--plan", uninstall, "--result", result); code != cli.ExitUsage {
		t.Errorf("an uninstall plan given to install: %d", code)
	}

	root, _ := rootfs(t, "version = 2\n[plugins\n")
	code, _, errOut = run(t, "install", "--plan", writePlan(t, demoPlan(t)), "--host-root", root, "--offline", "--result", result)
	r := readResult(t, result)
	if code != cli.ExitRefused || r.Reason != plan.ReasonConfigInvalid || !strings.Contains(r.Message, "/etc/containerd/config.toml:2") {
		t.Errorf("broken config: exit %d, %+v: %s", code, r, errOut)
	}
	// A handler of the plan's name that shimkit did not write: refused,
	// with the code that ends a Job at once; the config as it was.
	foreign := "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.demo]\n  runtime_type = \"io.containerd.demo.v2\"\n"
	root, cfg := rootfs(t, foreign)
	code, _, errOut = run(t, "install", "--plan", writePlan(t, demoPlan(t)), "--host-root", root, "--offline", "--result", result)
	if r := readResult(t, result); code != cli.ExitRefused || r.Reason != plan.ReasonConflict || !strings.Contains(errOut, "retrying cannot change this") {
		t.Errorf("a foreign handler: exit %d, %+v: %s", code, r, errOut)
	}
	if data, _ := os.ReadFile(cfg); string(data) != foreign {
		t.Errorf("the refused install changed the config: %q", data)
	}
	root, _ = rootfs(t, "version = 2\n")
	p := demoPlan(t)
	p.Artifact.Path = filepath.Join(root, "missing.tar.gz")
	code, _, errOut = run(t, "install", "--plan", writePlan(t, p), "--host-root", root, "--offline", "--result", result)
	if code != cli.ExitFailed || !strings.Contains(errOut, "node unchanged") || readResult(t, result).Reason != plan.ReasonFetchFailed {
		t.Errorf("missing artifact: exit %d: %s %+v", code, errOut, readResult(t, result))
	}
}

// namedPlan is demoPlan for a Shim and handler of another name.
func namedPlan(t *testing.T, name string) *plan.NodePlan {
	p := demoPlan(t)
	p.Shim = plan.ShimRef{Name: name, UID: "uid-" + name}
	p.Files[0].Path = "containerd-shim-" + name + "-v2"
	p.Handlers[0].Name, p.Handlers[0].RuntimeType = name, "io.containerd."+name+".v2"
	p.Handlers[0].RuntimePath = "$(BUNDLE_DIR)/containerd-shim-" + name + "-v2"
	return p
}

// writeList encodes a NodePlanList of the plans into a file.
func writeList(t *testing.T, plans ...*plan.NodePlan) string {
	t.Helper()
	data, err := plan.EncodeList(plan.NewList(plans...))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "plans.json")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPlanList: a NodePlanList installs both Shims in one operation and is
// answered with a NodeResultList; when one Shim's artifact is missing, it
// reports FetchFailed, the other SiblingFailed, and the node is unchanged.
func TestPlanList(t *testing.T) {
	const orig = "version = 2\n"
	root, cfg := rootfs(t, orig)
	result := filepath.Join(t.TempDir(), "result.json")
	readResults := func() []*plan.NodeResult {
		data, err := os.ReadFile(result)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := plan.DecodeResults(data)
		if err != nil || len(rs) != 2 {
			t.Fatalf("results %v: %v\n%s", rs, err, data)
		}
		return rs
	}

	broken := namedPlan(t, "beta")
	broken.Artifact.Path = filepath.Join(root, "missing.tar.gz")
	code, _, errOut := run(t, "install", "--plan", writeList(t, namedPlan(t, "alpha"), broken), "--host-root", root, "--offline", "--result", result)
	rs := readResults()
	if code != cli.ExitFailed || rs[0].Shim.Name != "alpha" || rs[0].Outcome != plan.Failed || rs[0].Reason != plan.ReasonSiblingFailed ||
		rs[1].Reason != plan.ReasonFetchFailed || !strings.Contains(rs[0].Message, "Shim beta") {
		t.Errorf("one artifact missing: exit %d, %+v %+v: %s", code, rs[0], rs[1], errOut)
	}
	if data, _ := os.ReadFile(cfg); string(data) != orig {
		t.Errorf("config changed: %q", data)
	}

	code, out, errOut := run(t, "install", "--plan", writeList(t, namedPlan(t, "alpha"), namedPlan(t, "beta")), "--host-root", root, "--offline", "--result", result)
	if code != cli.ExitOK || !strings.Contains(out, "install alpha: done") || !strings.Contains(out, "install beta: done") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	for k, r := range readResults() {
		if r.Outcome != plan.Succeeded || r.Shim.Name != []string{"alpha", "beta"}[k] || len(r.Files) != 1 {
			t.Errorf("result %d: %+v", k, r)
		}
	}
	data, _ := os.ReadFile(cfg)
	c, err := containerdconfig.Parse(cfg, data)
	if err != nil || !c.HasHandler("alpha") || !c.HasHandler("beta") {
		t.Errorf("handlers not registered: %v\n%s", err, data)
	}
}

// verifyPlan is p under the verify operation.
func verifyPlan(p *plan.NodePlan) *plan.NodePlan {
	c := *p
	c.Operation = plan.OpVerify
	return &c
}

// TestVerify: verify exits 0 whether the node is as recorded or not, with
// the drift in the result and on stdout, and changes nothing; installing
// the same plan repairs it; a node it cannot read, or a plan it refuses,
// is a non-zero exit with a typed result.
func TestVerify(t *testing.T) {
	root, cfg := rootfs(t, "version = 2\n")
	result := filepath.Join(t.TempDir(), "result.json")
	p := demoPlan(t)
	flags := []string{"--host-root", root, "--offline", "--log-format", "text", "--result", result}
	if code, out, errOut := run(t, append([]string{"install", "--plan", writePlan(t, p)}, flags...)...); code != cli.ExitOK {
		t.Fatalf("install: exit %d: %s %s", code, out, errOut)
	}
	vp := writePlan(t, verifyPlan(p))
	code, out, errOut := run(t, append([]string{"verify", "--plan", vp}, flags...)...)
	r := readResult(t, result)
	if code != cli.ExitOK || r.Outcome != plan.Succeeded || r.Operation != plan.OpVerify || len(r.Drift) != 0 || r.Digest != p.Artifact.Digest || !strings.Contains(out, "verify demo: as recorded") {
		t.Errorf("as installed: exit %d, %+v\n%s%s", code, r, out, errOut)
	}

	bin := filepath.Join(root, "opt/shimkit/demo/current/containerd-shim-demo-v2")
	orig, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, append([]string{"verify", "--plan", vp}, flags...)...)
	r = readResult(t, result)
	if code != cli.ExitOK || r.Outcome != plan.Succeeded || len(r.Drift) != 1 || !strings.Contains(r.Drift[0], "containerd-shim-demo-v2 was changed (sha256:") ||
		!strings.Contains(out, "verify demo: 1 not as recorded") || !strings.Contains(out, "  - file /opt/shimkit/demo/") {
		t.Errorf("a changed binary: exit %d, %+v\n%s%s", code, r, out, errOut)
	}
	if got, _ := os.ReadFile(bin); string(got) != "#!/bin/sh\n" {
		t.Error("verify touched the binary")
	}

	code, out, errOut = run(t, append([]string{"install", "--plan", writePlan(t, p)}, flags...)...)
	if r := readResult(t, result); code != cli.ExitOK || len(r.Drift) != 1 || !strings.Contains(out, "install demo: repaired") || !strings.Contains(out, "  repaired: file /opt/shimkit/demo/") {
		t.Errorf("repair: exit %d, %+v\n%s%s", code, r, out, errOut)
	}
	if got, _ := os.ReadFile(bin); string(got) != string(orig) {
		t.Error("the binary was not restored")
	}
	if code, out, _ := run(t, append([]string{"verify", "--plan", vp}, flags...)...); code != cli.ExitOK || len(readResult(t, result).Drift) != 0 {
		t.Errorf("after the repair: exit %d\n%s", code, out)
	}

	if code, _, _ := run(t, append([]string{"verify"}, flags...)...); code != cli.ExitUsage || readResult(t, result).Reason != plan.ReasonInvalidPlan {
		t.Errorf("verify without --plan: exit %d", code)
	}
	if code, _, _ := run(t, append([]string{"verify", "--plan", writePlan(t, p)}, flags...)...); code != cli.ExitUsage || readResult(t, result).Reason != plan.ReasonInvalidPlan {
		t.Errorf("an install plan given to verify: exit %d", code)
	}
	if err := os.WriteFile(cfg, []byte("version = 2\n[plugins\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, append([]string{"verify", "--plan", vp}, flags...)...)
	if r := readResult(t, result); code != cli.ExitRefused || r.Outcome != plan.Failed || r.Reason != plan.ReasonConfigInvalid || !strings.Contains(errOut, "verify failed") {
		t.Errorf("a config that does not parse: exit %d, %+v: %s", code, r, errOut)
	}
}
