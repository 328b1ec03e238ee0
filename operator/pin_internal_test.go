package operator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func tagShim() *v1alpha1.Shim {
	return &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.local/shims/s:v1"}},
			RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "s"},
		},
	}
}

// TestResolveDue: the artifact is resolved again on a spec change, a new
// annotation value or when the interval has passed, and only then.
func TestResolveDue(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pinned := func(s *v1alpha1.Shim, at time.Time, request string) {
		h := specHash(s)
		s.Status.Artifact = &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("1", 64), ResolvedAt: metav1.NewTime(at), SpecHash: resolveKey(s, h), ResolveRequest: request}
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
			s := tagShim()
			pinned(s, now.Add(-time.Hour), "")
			tt.change(s)
			if got := resolveDue(s, specHash(s), now); got != tt.want {
				t.Errorf("resolveDue = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTargetHash: the resolved digest is part of what a node installs,
// unless the spec pins the artifact itself; the resolve interval is not.
func TestTargetHash(t *testing.T) {
	s := tagShim()
	h := specHash(s)
	a := &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("1", 64)}
	b := &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("2", 64)}
	if targetHash(s, h, a) == targetHash(s, h, b) || targetHash(s, h, a) == h {
		t.Error("a tag's resolved digest does not enter the target hash")
	}
	if targetHash(s, h, nil) != h {
		t.Error("an unresolved spec changed its hash")
	}
	pinnedRef := tagShim()
	pinnedRef.Spec.FetchStrategy.OCI.Reference = "registry.local/shims/s@sha256:" + strings.Repeat("3", 64)
	ph := specHash(pinnedRef)
	if targetHash(pinnedRef, ph, a) != ph {
		t.Error("a digest reference's hash changed with its resolution")
	}
	iv := tagShim()
	iv.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: time.Hour}
	if specHash(iv) != h {
		t.Error("the resolve interval changed the spec hash (every node would reinstall)")
	}
}

// TestStaticResolver: the in-memory resolver pins what the spec pins and
// what its map knows; anything else is not found.
func TestStaticResolver(t *testing.T) {
	d := "sha256:" + strings.Repeat("4", 64)
	r := StaticResolver{"registry.local/shims/s:v1": digest.Digest(d)}
	got, err := r.Resolve(context.Background(), ResolveInput{Fetch: tagShim().Spec.FetchStrategy})
	if err != nil || got.Digest != d {
		t.Errorf("Resolve = %+v, %v", got, err)
	}
	other := tagShim().Spec.FetchStrategy
	other.OCI.Reference = "registry.local/shims/s:v9"
	if _, err := r.Resolve(context.Background(), ResolveInput{Fetch: other}); !errors.Is(err, fetch.ErrNotFound) {
		t.Errorf("unknown tag: %v", err)
	}
	if ref := resolveRefusal(fetch.ErrNotFound); ref.reason != v1alpha1.ReasonResolveFailed {
		t.Errorf("reason %s", ref.reason)
	}
}
