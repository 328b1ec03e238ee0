package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestSpecRefusals: a spec the API server accepts but the operator cannot
// roll out safely installs no node and says so, naming the field: a pull
// secret outside the operator's namespace (the Jobs could not mount it),
// and containerd's runc shim without runtimeOptions.BinaryName (which CEL
// cannot read). A pull secret in the operator's namespace, or of no
// namespace, is mounted.
func TestSpecRefusals(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 2, nil, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperatorResolving(t, env, operator.StaticResolver{"registry.invalid/shims/spin:v1": digest.Digest("sha256:" + strings.Repeat("8", 64))}, "creds")
	oci := func(namespace string) func(*v1alpha1.Shim) {
		return func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{
				Reference: "registry.invalid/shims/spin:v1", PullSecretRef: &v1alpha1.SecretReference{Name: "creds", Namespace: namespace},
			}}
		}
	}
	runc := func(options string) func(*v1alpha1.Shim) {
		return func(s *v1alpha1.Shim) {
			s.Spec.RuntimeType = "io.containerd.runc.v2"
			s.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(options)}
		}
	}
	for i, tt := range []struct {
		name   string
		mutate func(*v1alpha1.Shim)
		reason string   // Degraded's; empty: rolled out
		want   []string // in Degraded's and Ready's message
	}{
		{"secret in another namespace", oci("tenant-a"), v1alpha1.ReasonPullSecretNamespace,
			[]string{`spec.fetchStrategy.oci.pullSecretRef.namespace: "tenant-a"`, `the operator's namespace "` + jobNamespace + `"`, "create Secret creds in " + jobNamespace}},
		{"secret in the operator's namespace", oci(jobNamespace), "", nil},
		{"secret of no namespace", oci(""), "", nil},
		{"runc shim without BinaryName", runc(`{"SystemdCgroup": true}`), v1alpha1.ReasonReservedRuntimeType,
			[]string{"spec.runtimeOptions.BinaryName: not set", "io.containerd.runc.v2", "reserved for containerd's own shims"}},
		{"runc shim running the bundle's runtime", runc(`{"BinaryName": "$(BUNDLE_DIR)/crun"}`), "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("refusal-%d", i)
			s := newShim(name, name, "2", nil)
			tt.mutate(s)
			if err := env.Client.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			if tt.reason == "" {
				waitFor(t, 30*time.Second, "Ready", ready(env.Client, name))
				for _, j := range jobsOf(t, env.Client, name) {
					if oci := s.Spec.FetchStrategy.OCI; oci != nil && !mountsSecret(j.Spec.Template.Spec.Volumes, oci.PullSecretRef.Name) {
						t.Errorf("Job %s does not mount Secret %s", j.Name, oci.PullSecretRef.Name)
					}
				}
				return
			}
			waitFor(t, 20*time.Second, "Degraded "+tt.reason, func() (bool, string) {
				got := getShim(t, env.Client, name)
				c := condition(got, v1alpha1.ConditionDegraded)
				return c != nil && c.Reason == tt.reason && c.Status == metav1.ConditionTrue && got.Status.ObservedGeneration == got.Generation, fmt.Sprintf("%+v", got.Status.Conditions)
			})
			got := getShim(t, env.Client, name)
			for _, c := range []*metav1.Condition{condition(got, v1alpha1.ConditionDegraded), condition(got, v1alpha1.ConditionReady)} {
				if c.Reason != tt.reason {
					t.Errorf("%s reason %s, want %s", c.Type, c.Reason, tt.reason)
				}
				for _, part := range tt.want {
					if !strings.Contains(c.Message, part) {
						t.Errorf("%s message lacks %q: %s", c.Type, part, c.Message)
					}
				}
			}
			if c := condition(got, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonHalted {
				t.Errorf("Progressing %+v", c)
			}
			waitFor(t, 10*time.Second, "a Warning Event", func() (bool, string) {
				notes := eventNotes(t, env.Client, name, corev1.EventTypeWarning)
				return len(notes) > 0 && strings.Contains(notes[0], tt.want[0]), fmt.Sprint(notes)
			})
			time.Sleep(time.Second)
			if jobs := jobsOf(t, env.Client, name); len(jobs) != 0 {
				t.Errorf("%d Jobs for a refused spec", len(jobs))
			}
			if n := len(nodesWith(t, env.Client, name)); n != 0 {
				t.Errorf("%d nodes labelled for a refused spec", n)
			}
		})
	}
}

func mountsSecret(volumes []corev1.Volume, secret string) bool {
	for _, v := range volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			return true
		}
	}
	return false
}
