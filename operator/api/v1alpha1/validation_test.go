package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func validShim(name string) *v1alpha1.Shim {
	return &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{
				Type:     v1alpha1.FetchAnonHTTP,
				AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://example.invalid/spin.tar.gz", SHA256: strings.Repeat("a", 64)},
			},
			RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"},
		},
	}
}

func intOrString(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// TestAdmission proves every validation rule of the CRD against a real API
// server: each bad spec is rejected with a message naming the field, and
// good specs are accepted with their defaults.
func TestAdmission(t *testing.T) {
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	ctx := context.Background()

	bad := []struct {
		name   string
		mutate func(*v1alpha1.Shim)
		want   string // in the error
	}{
		{"anonHttp type without anonHttp", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP = nil }, "fetchStrategy: set exactly the one of anonHttp and oci"},
		{"both anonHttp and oci", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.OCI = &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}
		}, "fetchStrategy: set exactly the one of anonHttp and oci"},
		{"oci type with anonHttp", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.Type = v1alpha1.FetchOCI }, "fetchStrategy: set exactly the one of anonHttp and oci"},
		{"unknown fetch type", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.Type = "ftp" }, "spec.fetchStrategy.type"},
		{"location not http", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.Location = "file:///etc/passwd" }, "spec.fetchStrategy.anonHttp.location"},
		{"no location and no platforms", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.Location = "" }, "fetchStrategy.anonHttp: set location, or platforms"},
		{"sha256 not hex", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.SHA256 = "abc" }, "spec.fetchStrategy.anonHttp.sha256"},
		{"unknown platform", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.AnonHTTP.Platforms = []v1alpha1.PlatformArtifact{{Platform: "linux/riscv64", Location: "https://x.invalid/a"}}
		}, "spec.fetchStrategy.anonHttp.platforms[0].platform"},
		{"platform twice", func(s *v1alpha1.Shim) {
			p := v1alpha1.PlatformArtifact{Platform: "linux/arm64", Location: "https://x.invalid/a"}
			s.Spec.FetchStrategy.AnonHTTP.Platforms = []v1alpha1.PlatformArtifact{p, p}
		}, "fetchStrategy.anonHttp.platforms: each platform at most once"},
		{"oci reference malformed", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "not a reference"}}
		}, "spec.fetchStrategy.oci.reference"},
		{"handler not a DNS label", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = "Spin_V2" }, "spec.runtimeClass.handler"},
		{"handler too long", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = strings.Repeat("a", 64) }, "spec.runtimeClass.handler"},
		{"runtime class name invalid", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Name = "Wasm Time" }, "spec.runtimeClass.name"},
		{"runtime type malformed", func(s *v1alpha1.Shim) { s.Spec.RuntimeType = "spin" }, "spec.runtimeType"},
		{"runtime path relative", func(s *v1alpha1.Shim) { s.Spec.RuntimePath = "bin/shim" }, "spec.runtimePath"},
		{"toleration effect unknown", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass.Tolerations = []v1alpha1.Toleration{{Key: "k", Effect: "Sometimes"}}
		}, "spec.runtimeClass.tolerations[0].effect"},
		{"maxUpdate zero", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("0")}}
		}, "rolloutStrategy.rolling.maxUpdate: a count of at least 1"},
		{"maxUpdate 0%", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("0%")}}
		}, "rolloutStrategy.rolling.maxUpdate"},
		{"maxUpdate 150%", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("150%")}}
		}, "rolloutStrategy.rolling.maxUpdate"},
		{"maxUpdate words", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("half")}}
		}, "rolloutStrategy.rolling.maxUpdate"},
		{"rolling settings with recreate", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRecreate, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("2")}}
		}, "rolloutStrategy.rolling is only for type rolling"},
		{"unknown rollout type", func(s *v1alpha1.Shim) { s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: "bluegreen"} }, "spec.rolloutStrategy.type"},
	}
	for i, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			s := validShim(fmt.Sprintf("bad-%d", i))
			tt.mutate(s)
			err := env.Client.Create(ctx, s)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not name %q:\n%v", tt.want, err)
			}
		})
	}

	t.Run("defaults", func(t *testing.T) {
		s := validShim("defaults")
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		rs := s.Spec.RolloutStrategy
		if rs == nil || rs.Type != v1alpha1.RolloutRolling || rs.Rolling == nil || rs.Rolling.MaxUpdate.IntValue() != 1 {
			t.Errorf("default rollout strategy = %+v", rs)
		}
	})
	t.Run("good specs", func(t *testing.T) {
		for i, mutate := range []func(*v1alpha1.Shim){
			func(s *v1alpha1.Shim) {
				s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("10%")}}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRecreate}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{
					Reference: "registry.invalid:5000/shims/spin@sha256:" + strings.Repeat("b", 64), PullSecretRef: &v1alpha1.SecretReference{Name: "pull"}, PlainHTTP: true,
				}}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Platforms: []v1alpha1.PlatformArtifact{
					{Platform: "linux/amd64", Location: "https://x.invalid/amd64.tgz"}, {Platform: "linux/arm64", Location: "https://x.invalid/arm64.tgz"},
				}}
				s.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(`{"SystemdCgroup":true,"Nested":{"n":1}}`)}
				s.Spec.NodeSelector = map[string]string{"wasm": "true"}
			},
		} {
			s := validShim(fmt.Sprintf("good-%d", i))
			mutate(s)
			if err := env.Client.Create(ctx, s); err != nil {
				t.Errorf("good spec %d rejected: %v", i, err)
			}
		}
	})
	t.Run("handler is immutable", func(t *testing.T) {
		s := validShim("immutable")
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Spec.RuntimeClass.Handler = "other"
		err := env.Client.Update(ctx, s)
		if err == nil || !strings.Contains(err.Error(), "runtimeClass.handler is immutable") {
			t.Errorf("update of the handler: %v", err)
		}
		s.Spec.RuntimeClass.Handler = "spin"
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://example.invalid/spin-v2.tar.gz"
		if err := env.Client.Update(ctx, s); err != nil {
			t.Errorf("other fields must stay mutable: %v", err)
		}
	})
}
