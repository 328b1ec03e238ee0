package pin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opencontainers/go-digest"
	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
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

// TestRetryAfter: a failed resolution is asked again after the base wait,
// doubled per failure in a row, at most 10 minutes, and at most the
// resolve interval.
func TestRetryAfter(t *testing.T) {
	base := 30 * time.Second
	for _, tt := range []struct {
		attempts int
		interval time.Duration
		want     time.Duration
	}{
		{1, 0, 30 * time.Second},
		{2, 0, time.Minute},
		{3, 0, 2 * time.Minute},
		{5, 0, 8 * time.Minute},
		{6, 0, 10 * time.Minute},
		{60, 0, 10 * time.Minute},
		{1, time.Minute, 30 * time.Second},
		{4, time.Minute, time.Minute},
	} {
		if got := retryAfter(tt.attempts, base, tt.interval); got != tt.want {
			t.Errorf("retryAfter(%d, %s, %s) = %s, want %s", tt.attempts, base, tt.interval, got, tt.want)
		}
	}
}

// TestResolveAsk: what a failed resolution is remembered by changes with
// everything that can change its answer, and with nothing else.
func TestResolveAsk(t *testing.T) {
	in := Input{DockerConfigJSON: []byte(`{"auths":{}}`)}
	ask := func(s *v1alpha1.Shim, in Input) string { return resolveAsk(s, nodeview.SpecHash(s), in) }
	want := ask(tagShim(), in)
	for _, tt := range []struct {
		name    string
		change  func(s *v1alpha1.Shim, in *Input)
		changes bool
	}{
		{"nothing", func(*v1alpha1.Shim, *Input) {}, false},
		{"the status", func(s *v1alpha1.Shim, _ *Input) {
			s.Status.Artifact = &v1alpha1.ResolvedArtifact{LastError: "SignatureInvalid: ..."}
		}, false},
		{"the node selector", func(s *v1alpha1.Shim, _ *Input) { s.Spec.NodeSelector = map[string]string{"a": "b"} }, false},
		{"the reference", func(s *v1alpha1.Shim, _ *Input) { s.Spec.FetchStrategy.OCI.Reference += "2" }, true},
		{"the verification", func(s *v1alpha1.Shim, _ *Input) {
			s.Spec.Verification = &v1alpha1.Verification{PublicKeys: []string{"-----BEGIN PUBLIC KEY-----"}}
		}, true},
		{"the resolve annotation", func(s *v1alpha1.Shim, _ *Input) {
			s.Annotations = map[string]string{v1alpha1.ResolveAnnotation: "1"}
		}, true},
		{"the resolve interval", func(s *v1alpha1.Shim, _ *Input) {
			s.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: time.Hour}
		}, true},
		{"the pull secret", func(_ *v1alpha1.Shim, in *Input) { in.DockerConfigJSON = []byte(`{"auths":{"r":{}}}`) }, true},
		{"the trusted root", func(_ *v1alpha1.Shim, in *Input) { in.TrustedRoot = []byte(`{}`) }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, in := tagShim(), in
			tt.change(s, &in)
			if got := ask(s, in); (got != want) != tt.changes {
				t.Errorf("changed %v, want %v", got != want, tt.changes)
			}
		})
	}
}

// TestFailedResolveMemo: a failed resolution is remembered per Shim (a
// Shim recreated under the same name starts afresh), counts the failures
// of the same question in a row, and is forgotten once a resolution
// succeeds or the Shim goes; Next waits for its backoff.
func TestFailedResolveMemo(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := New(nil, nil, "", 0)
	s := tagShim()
	s.UID = "uid-1"
	ref := &shimspec.Refusal{Reason: v1alpha1.ReasonSignatureInvalid, Message: "no"}
	base := time.Second
	if f := r.pins.fail(s, "q1", ref, now, base); f.attempts != 1 || !f.retryAt.Equal(now.Add(time.Second)) {
		t.Errorf("first failure %+v", f)
	}
	if f := r.pins.fail(s, "q1", ref, now, base); f.attempts != 2 || !f.retryAt.Equal(now.Add(2*time.Second)) {
		t.Errorf("second failure %+v", f)
	}
	if f, ok := r.pins.failure(s, "q1"); !ok || f.ref != ref || f.attempts != 2 {
		t.Errorf("failure(q1) = %+v, %v", f, ok)
	}
	if _, ok := r.pins.failure(s, "q2"); ok {
		t.Error("another question answered from memory")
	}
	if at := r.NextAt(s, nil); !at.Equal(now.Add(2 * time.Second)) {
		t.Errorf("NextAt of a refused spec = %s, want after its backoff 2s", at)
	}
	if f := r.pins.fail(s, "q2", ref, now, base); f.attempts != 1 {
		t.Errorf("a new question counts on: %+v", f)
	}
	again := s.DeepCopy()
	again.UID = "uid-2"
	if _, ok := r.pins.failure(again, "q2"); ok {
		t.Error("a recreated Shim inherits its predecessor's failure")
	}
	if at := r.NextAt(again, nil); !at.IsZero() {
		t.Errorf("NextAt of a recreated Shim = %s", at)
	}

	// A pinned digest whose interval passed and whose re-resolution
	// failed: the next try after the backoff, not at once.
	iv := s.DeepCopy()
	iv.Spec.FetchStrategy.ResolveInterval = &metav1.Duration{Duration: time.Minute}
	art := &v1alpha1.ResolvedArtifact{ResolvedAt: metav1.NewTime(now.Add(-2 * time.Minute))}
	r.pins.fail(iv, "q3", ref, now, 30*time.Second)
	if at := r.NextAt(iv, art); !at.Equal(now.Add(30 * time.Second)) {
		t.Errorf("NextAt after a failed interval resolution = %s, want 30s later", at)
	}

	r.pins.succeeded(s)
	if _, ok := r.pins.lastFailure(s); ok {
		t.Error("a success left the failure")
	}
	r.pins.fail(s, "q1", ref, now, base)
	r.pins.forget(s.Name)
	if _, ok := r.pins.lastFailure(s); ok {
		t.Error("a deleted Shim's failure is kept")
	}
}

// TestStaticResolver: the in-memory resolver pins what the spec pins and
// what its map knows; anything else is not found.
func TestStaticResolver(t *testing.T) {
	d := "sha256:" + strings.Repeat("4", 64)
	r := StaticResolver{"registry.local/shims/s:v1": digest.Digest(d)}
	got, err := r.Resolve(context.Background(), Input{Fetch: tagShim().Spec.FetchStrategy})
	if err != nil || got.Digest != d {
		t.Errorf("Resolve = %+v, %v", got, err)
	}
	other := tagShim().Spec.FetchStrategy
	other.OCI.Reference = "registry.local/shims/s:v9"
	if _, err := r.Resolve(context.Background(), Input{Fetch: other}); !errors.Is(err, fetch.ErrNotFound) {
		t.Errorf("unknown tag: %v", err)
	}
	if ref := resolveRefusal(fetch.ErrNotFound); ref.Reason != v1alpha1.ReasonResolveFailed {
		t.Errorf("reason %s", ref.Reason)
	}
}
