package plan_test

import (
	"bytes"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// assertGolden compares data with the golden file testdata/name (rewriting
// it with -update) and returns the file's content.
func assertGolden(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	return golden.Check(t, filepath.Join("testdata", name), data, *update)
}

// gvisorPlan is the plan of a gVisor bundle: runsc, its shim and a config
// file that names runsc through the bundle placeholder.
func gvisorPlan() *plan.NodePlan {
	p := plan.New(plan.ShimRef{Name: "gvisor", UID: "0d4c5d1e-8a43-4f0c-9a0e-2f6c0f7f1a11"}, plan.OpInstall)
	p.Node = "node-1"
	p.SpecHash = "3f1e0b6a9c2d4e5f"
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: "https://artifacts.example/gvisor-20260101.tar.gz",
		Digest: "sha256:" + strings.Repeat("ab", 32), Platform: "linux/amd64"}
	p.Files = []plan.File{
		{Source: "runsc", Path: "runsc", Mode: 0o755},
		{Source: "containerd-shim-runsc-v1", Path: "containerd-shim-runsc-v1", Mode: 0o755},
		{Source: "runsc.toml", Path: "runsc.toml", Mode: 0o644, Substitute: true},
	}
	p.Handlers = []plan.Handler{{
		Name: "runsc", RuntimeType: "io.containerd.runsc.v1", RuntimePath: plan.BundleDirPlaceholder + "/containerd-shim-runsc-v1",
		Options: map[string]any{"TypeUrl": "io.containerd.runsc.v1.options", "ConfigPath": plan.BundleDirPlaceholder + "/runsc.toml"},
	}}
	p.Restart = plan.Restart{Timeout: plan.Duration(60 * time.Second)}
	p.Canary = &plan.Canary{Handler: "runsc", RuntimeClass: "shimkit-canary-gvisor", Namespace: "shimkit-system", Image: "registry.example/shimkit-installer:v0.1.0", Args: []string{"canary"}, Timeout: plan.Duration(time.Minute)}
	return p
}

// imagePlan is gvisorPlan with its bundle in a container image that the
// kubelet put at /shimkit/image in the installer's pod.
func imagePlan() *plan.NodePlan {
	p := gvisorPlan()
	d := "sha256:" + strings.Repeat("cd", 32)
	p.Artifact = &plan.Artifact{Type: plan.SourceImage, Reference: "registry.example/shims/gvisor@" + d, Digest: d, Path: "/shimkit/image", Platform: "linux/amd64"}
	return p
}

// verifyPlan is gvisorPlan under the verify operation: what the operator
// hands a node to check that it still has the Shim's current spec.
func verifyPlan() *plan.NodePlan {
	p := gvisorPlan()
	p.Operation = plan.OpVerify
	return p
}

// crioPlan is an OCI runtime (crun built with Wasm) for a CRI-O node: an
// oci handler there, with CRI-O's allowed_annotations and
// container_min_memory as settings.
func crioPlan() *plan.NodePlan {
	p := plan.New(plan.ShimRef{Name: "crun-wasm", UID: "uid-4"}, plan.OpInstall)
	p.Node = "crio-node-1"
	p.Runtime = plan.RuntimeCRIO
	p.SpecHash = "89abcdef01234567"
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: "https://artifacts.example/crun-1.21.tar.gz", Digest: "sha256:" + strings.Repeat("ef", 32), Platform: "linux/amd64"}
	p.Files = []plan.File{{Source: "crun", Path: "crun", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "crun-wasm", RuntimeType: "io.containerd.runc.v2",
		Options:  map[string]any{"BinaryName": plan.BundleDirPlaceholder + "/crun"},
		Settings: map[string]any{"allowed_annotations": []any{"module.wasm.image/variant"}, "container_min_memory": "4MiB"}}}
	return p
}

func sandboxerPlan() *plan.NodePlan {
	p := plan.New(plan.ShimRef{Name: "kuasar", UID: "uid-2"}, plan.OpInstall)
	p.SpecHash = "0123456789abcdef"
	p.Artifact = &plan.Artifact{Type: plan.SourceOCI, Reference: "registry.local:5000/shims/kuasar:v1", PlainHTTP: true, PullSecretPath: "/etc/shimkit/pull-secret/config.json"}
	p.Files = []plan.File{{Source: "bin/vmm-sandboxer", Path: "vmm-sandboxer", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "kuasar-vmm", RuntimeType: "io.containerd.kuasar-vmm.v1", Sandboxer: "vmm", IOType: "streaming",
		PodAnnotations: []string{"io.kuasar.*"}, Settings: map[string]any{"cni_max_conf_num": int64(2)}}}
	p.Sandboxers = []plan.Sandboxer{{Name: "vmm", Unit: "shimkit-vmm.service", Address: "/run/shimkit/vmm.sock",
		Command: []string{plan.BundleDirPlaceholder + "/vmm-sandboxer", "--listen", "/run/shimkit/vmm.sock"}, Environment: []string{"RUST_LOG=info"}}}
	return p
}

// TestGolden pins the wire format: the operator and installers of other
// builds read exactly these documents.
func TestGolden(t *testing.T) {
	for name, p := range map[string]*plan.NodePlan{
		"gvisor":    gvisorPlan(),
		"sandboxer": sandboxerPlan(),
		"uninstall": plan.New(plan.ShimRef{Name: "spin", UID: "uid-3"}, plan.OpUninstall),
		"verify":    verifyPlan(),
		"image":     imagePlan(),
		"crio":      crioPlan(),
	} {
		t.Run(name, func(t *testing.T) {
			data, err := plan.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			want := assertGolden(t, name+".json", data)
			back, err := plan.Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOptionsKeepTOMLTypes: whole numbers come back as int64, fractions as
// float64, nested tables and arrays too.
func TestOptionsKeepTOMLTypes(t *testing.T) {
	p := gvisorPlan()
	p.Handlers[0].Options = map[string]any{"Threads": int64(4), "Ratio": 0.5, "Nested": map[string]any{"N": int64(1), "L": []any{int64(1), "a"}}}
	data, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Handlers[0].Options, back.Handlers[0].Options); diff != "" {
		t.Error(diff)
	}
}

// TestDecodeRefuses: other versions and kinds, unknown fields and invalid
// values are refused with the field named.
func TestDecodeRefuses(t *testing.T) {
	good, err := plan.Encode(gvisorPlan())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte { return bytes.Replace(good, []byte(old), []byte(new), 1) }
	for _, tc := range []struct {
		name string
		data []byte
		err  error
		want string
	}{
		{"other version", edit(`"installer.shimkit.dev/v1alpha1"`, `"installer.shimkit.dev/v2"`), plan.ErrVersion, "installer.shimkit.dev/v2"},
		{"other kind", edit(`"NodePlan"`, `"NodeResult"`), plan.ErrVersion, "NodeResult"},
		{"not JSON", []byte("apiVersion: x"), plan.ErrInvalid, "invalid character"},
		{"unknown field", edit(`"node":`, `"nodes": "x", "node":`), plan.ErrInvalid, `unknown field "nodes"`},
		{"trailing", append(slicesClone(good), []byte("{}")...), plan.ErrInvalid, "after top-level value"},
		{"bad handler name", edit(`"name": "runsc"`, `"name": "Runsc_1"`), plan.ErrInvalid, "handlers[0]: name"},
		{"bad runtime type", edit(`"io.containerd.runsc.v1"`, `"runsc"`), plan.ErrInvalid, "handlers[0]: runtimeType"},
		{"file escapes", edit(`"path": "runsc.toml"`, `"path": "../etc/runsc.toml"`), plan.ErrInvalid, "files[2]: path"},
		{"setuid", edit(`"mode": 493`, `"mode": 2541`), plan.ErrInvalid, "files[0]: mode 04755"},
		{"duplicate file", edit(`"path": "containerd-shim-runsc-v1"`, `"path": "runsc"`), plan.ErrInvalid, `files[1].path "runsc": given twice`},
		{"bad digest", edit(`"sha256:abab`, `"md5:abab`), plan.ErrInvalid, "artifact.digest"},
		{"unknown runtime", edit(`"node":`, `"runtime": "docker", "node":`), plan.ErrInvalid, `runtime "docker": want "containerd", "cri-o" or empty`},
		{"bad operation", edit(`"operation": "install"`, `"operation": "upgrade"`), plan.ErrInvalid, `operation "upgrade"`},
		{"bad timeout", edit(`"timeout": "1m0s"`, `"timeout": "soon"`), plan.ErrInvalid, `duration "soon"`},
		{"canary of another handler", edit(`"handler": "runsc"`, `"handler": "runc"`), plan.ErrInvalid, `canary.handler "runc"`},
		{"canary without image", edit(`"image": "registry.example/shimkit-installer:v0.1.0"`, `"image": " "`), plan.ErrInvalid, "canary.image"},
		{"verify without spec hash", edit(`"operation": "install",
  "specHash": "3f1e0b6a9c2d4e5f"`, `"operation": "verify",
  "specHash": ""`), plan.ErrInvalid, "specHash: required for verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan.Decode(tc.data)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want %v naming %q", err, tc.err, tc.want)
			}
		})
	}
}

// TestVerifyPlanFollowsInstallRules: a verify plan is validated as an
// install plan is, field by field.
func TestVerifyPlanFollowsInstallRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*plan.NodePlan)
		want string // "": valid
	}{
		{"the install plan", func(*plan.NodePlan) {}, ""},
		{"no artifact", func(p *plan.NodePlan) { p.Artifact = nil }, "artifact: required for install and verify"},
		{"no files", func(p *plan.NodePlan) { p.Files = nil }, "files: at least one file"},
		{"no handlers", func(p *plan.NodePlan) { p.Handlers = nil }, "handlers: at least one handler"},
		{"bad digest", func(p *plan.NodePlan) { p.Artifact.Digest = "sha256:x" }, "artifact.digest"},
		{"bad handler", func(p *plan.NodePlan) { p.Handlers[0].Name = "Runsc" }, "handlers[0]: name"},
		{"an image", func(p *plan.NodePlan) { p.Artifact = imagePlan().Artifact }, ""},
		{"an image by tag", func(p *plan.NodePlan) {
			p.Artifact = imagePlan().Artifact
			p.Artifact.Reference = "registry.example/shims/gvisor:v1"
		}, "an image artifact is pinned"},
		{"an image without its path", func(p *plan.NodePlan) {
			p.Artifact = imagePlan().Artifact
			p.Artifact.Path = ""
		}, "artifact.path"},
		{"an image with a verification", func(p *plan.NodePlan) {
			p.Artifact = imagePlan().Artifact
			p.Artifact.Verification = &plan.Verification{PublicKeys: []string{"-----BEGIN PUBLIC KEY-----"}}
		}, "verified where its digest is pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []plan.Operation{plan.OpInstall, plan.OpVerify} {
				p := gvisorPlan()
				p.Operation = op
				tc.edit(p)
				err := p.Validate()
				if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), tc.want)) {
					t.Errorf("%s: got %v, want %q", op, err, tc.want)
				}
			}
		})
	}
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// TestValidateSandboxer covers the sandboxer rules.
func TestValidateSandboxer(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*plan.Sandboxer)
		want string
	}{
		{"relative command", func(s *plan.Sandboxer) { s.Command = []string{"vmm-sandboxer"} }, "sandboxers[0]: command"},
		{"bad unit", func(s *plan.Sandboxer) { s.Unit = "vmm" }, "sandboxers[0]: unit"},
		{"long socket", func(s *plan.Sandboxer) { s.Address = "/run/" + strings.Repeat("x", 120) }, "sandboxers[0]: address"},
		{"bad env", func(s *plan.Sandboxer) { s.Environment = []string{"=x"} }, "sandboxers[0]: environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sandboxerPlan()
			tc.edit(&p.Sandboxers[0])
			if err := p.Validate(); !errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestResultFitsTerminationMessage: a huge message and file list are cut
// so the result stays within the kubelet's 4096 bytes, keeping the
// outcome, reason and digest.
func TestResultFitsTerminationMessage(t *testing.T) {
	r := plan.NewResult(gvisorPlan())
	r.Outcome, r.Reason, r.Digest = plan.RolledBack, plan.ReasonConfigInvalid, "sha256:"+strings.Repeat("cd", 32)
	r.Message = strings.Repeat("/etc/containerd/config.toml:12: ünexpected ", 300)
	for k := 0; k < 200; k++ {
		r.Files = append(r.Files, "/opt/shimkit/gvisor/0123456789abcdef/file")
	}
	data, err := plan.EncodeResult(r, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > plan.MaxTerminationMessage {
		t.Fatalf("%d bytes", len(data))
	}
	back, err := plan.DecodeResult(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Outcome != plan.RolledBack || back.Reason != plan.ReasonConfigInvalid || back.Digest != r.Digest || !strings.HasPrefix(back.Message, "/etc/containerd/config.toml:12") {
		t.Errorf("lost what matters: %+v", back)
	}
	if _, err := plan.DecodeResult([]byte(`{"apiVersion":"x","kind":"NodeResult","outcome":"Succeeded"}`)); !errors.Is(err, plan.ErrVersion) {
		t.Errorf("another version: %v", err)
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts encodes and
// decodes to the same plan.
func FuzzDecode(f *testing.F) {
	for _, p := range []*plan.NodePlan{gvisorPlan(), sandboxerPlan(), verifyPlan()} {
		data, _ := plan.Encode(p)
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion":"installer.shimkit.dev/v1alpha1","kind":"NodePlan","shim":{"name":"a"},"operation":"uninstall"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Decode(data)
		if err != nil {
			return
		}
		out, err := plan.Encode(p)
		if err != nil {
			t.Fatalf("accepted plan does not encode: %v", err)
		}
		back, err := plan.Decode(out)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if diff := cmp.Diff(p, back); diff != "" {
			t.Fatal(diff)
		}
	})
}
