package decide_test

import (
	"fmt"
	"testing"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestSkippedNote: the Ready condition's note on skipped nodes, per
// reason: the count, the first names with what each node has instead,
// and, for a read-only or an immutable host (skipped, not failed), what
// lets it run the shim: a preinstalled Shim, or (read-only) a writable,
// executable bundle root.
func TestSkippedNote(t *testing.T) {
	skip := func(name, reason, detail string) decide.NodeView {
		return with(node(name, ""), func(v *decide.NodeView) { v.Skip = &nodeview.Skip{Reason: reason, Detail: detail} })
	}
	const (
		roHint  = "bake the runtime into the node image and select these nodes with spec.preinstalledOn, or, where the directory named is the bundle root or the link directory, move it to a writable, executable one (the operator's --bundle-root, --link-dir)"
		immHint = "bake the runtime into the node image (a Talos system extension, a Bottlerocket variant, examples/image-builder) and select these nodes with spec.preinstalledOn"
	)
	var many []decide.NodeView
	for i := range 12 {
		many = append(many, skip(fmt.Sprintf("cos-%02d", i), v1alpha1.SkipReadOnlyHost, "read-only host: the bundle root /opt/shimkit is on a read-only filesystem (at /opt)"))
	}
	for _, tc := range []struct {
		name  string
		views []decide.NodeView
		want  string
	}{
		{"none", []decide.NodeView{node("n0", target)}, ""},
		{"not matching: not counted", []decide.NodeView{with(skip("w0", v1alpha1.SkipNotLinux, "windows"), func(v *decide.NodeView) { v.Matching = false })}, ""},
		{"no hint for what the node is", []decide.NodeView{
			node("n0", target), skip("rv-1", v1alpha1.SkipNoArtifact, "linux/riscv64"),
			skip("win-2", v1alpha1.SkipNotLinux, "windows"), skip("win-1", v1alpha1.SkipNotLinux, "windows"),
			skip("crio", v1alpha1.SkipNotContainerd, "cri-o://1.31.0"),
			skip("baked", v1alpha1.SkipHandlerNotReported, "handler spin is not reported"),
		}, "; 5 nodes skipped: HandlerNotReported 1 (baked: handler spin is not reported); NoArtifact 1 (rv-1: linux/riscv64); NotContainerd 1 (crio: cri-o://1.31.0); NotLinux 2 (win-1: windows, win-2: windows)"},
		{"read-only host", []decide.NodeView{
			skip("cos", v1alpha1.SkipReadOnlyHost, "read-only host: the bundle root /opt/shimkit is on a filesystem mounted noexec (at /opt)"),
		}, "; 1 node skipped: ReadOnlyHost 1 (cos: read-only host: the bundle root /opt/shimkit is on a filesystem mounted noexec (at /opt)): " + roHint},
		{"immutable OS beside another reason", []decide.NodeView{
			skip("talos", v1alpha1.SkipImmutableOS, "Talos (v1.9.5)"), skip("br", v1alpha1.SkipImmutableOS, "Bottlerocket OS 1.26.0 (aws-k8s-1.31)"),
			skip("win", v1alpha1.SkipNotLinux, "windows"),
		}, "; 3 nodes skipped: ImmutableOS 2 (br: Bottlerocket OS 1.26.0 (aws-k8s-1.31), talos: Talos (v1.9.5)): " + immHint + "; NotLinux 1 (win: windows)"},
		{"more read-only hosts than names", many,
			"; 12 nodes skipped: ReadOnlyHost 12 (" + func() string {
				s := ""
				for i := range 10 {
					if i > 0 {
						s += ", "
					}
					s += fmt.Sprintf("cos-%02d: read-only host: the bundle root /opt/shimkit is on a read-only filesystem (at /opt)", i)
				}
				return s
			}() + ", ...): " + roHint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide.SkippedNote(tc.views); got != tc.want {
				t.Errorf("SkippedNote\n got  %q\n want %q", got, tc.want)
			}
		})
	}
	for _, r := range []string{v1alpha1.SkipNotLinux, v1alpha1.SkipNotContainerd, v1alpha1.SkipNoArtifact, v1alpha1.SkipHandlerNotReported} {
		if h := decide.SkipHint(r); h != "" {
			t.Errorf("SkipHint(%s) = %q: the node's kind, not its image, rules it out", r, h)
		}
	}
}
