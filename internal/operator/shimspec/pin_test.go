package shimspec

import (
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResolveDue: the artifact is resolved again on a spec change, a new
// annotation value or when the interval has passed, and only then.
func TestResolveDue(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pinned := func(s *v1alpha1.Shim, at time.Time, request string) {
		h := nodeview.SpecHash(s)
		s.Status.Artifact = &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("1", 64), ResolvedAt: metav1.NewTime(at), SpecHash: ResolveKey(s, h), ResolveRequest: request}
	}
	tests := []struct {
		name   string
		change func(s *v1alpha1.Shim)
		want   string
	}{
		{"never resolved", func(s *v1alpha1.Shim) { s.Status.Artifact = nil }, "spec"},
		{"pinned", func(*v1alpha1.Shim) {}, ""},
		{"spec changed", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.OCI.Reference = "registry.local/shims/s:v2" }, "spec"},
		{"verification added", func(s *v1alpha1.Shim) {
			s.Spec.Verification = &v1alpha1.Verification{PublicKeys: []string{"-----BEGIN PUBLIC KEY-----"}}
		}, "spec"},
		{"annotation set", func(s *v1alpha1.Shim) { s.Annotations = map[string]string{v1alpha1.ResolveAnnotation: "1"} }, "annotation"},
		{"interval not yet", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: 2 * time.Hour}
		}, ""},
		{"interval passed", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: 30 * time.Minute}
		}, "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ociShim("registry.local/shims/s:v1")
			pinned(s, now.Add(-time.Hour), "")
			tt.change(s)
			if got := ResolveDue(s, nodeview.SpecHash(s), now); got != tt.want {
				t.Errorf("resolveDue = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTargetHash: the resolved digest is part of what a node installs,
// unless the spec pins the artifact itself; the resolve interval is not.
func TestTargetHash(t *testing.T) {
	s := ociShim("registry.local/shims/s:v1")
	h := nodeview.SpecHash(s)
	a := &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("1", 64)}
	b := &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("2", 64)}
	if TargetHash(s, h, a) == TargetHash(s, h, b) || TargetHash(s, h, a) == h {
		t.Error("a tag's resolved digest does not enter the target hash")
	}
	if TargetHash(s, h, nil) != h {
		t.Error("an unresolved spec changed its hash")
	}
	pinnedRef := ociShim("registry.local/shims/s:v1")
	pinnedRef.Spec.FetchStrategy.OCI.Reference = "registry.local/shims/s@sha256:" + strings.Repeat("3", 64)
	ph := nodeview.SpecHash(pinnedRef)
	if TargetHash(pinnedRef, ph, a) != ph {
		t.Error("a digest reference's hash changed with its resolution")
	}
	iv := ociShim("registry.local/shims/s:v1")
	iv.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: time.Hour}
	if nodeview.SpecHash(iv) != h {
		t.Error("the resolve interval changed the spec hash (every node would reinstall)")
	}
}

func ociShim(ref string) *v1alpha1.Shim {
	return &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: ref}},
			RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "s"},
		},
	}
}
