package plugin

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestExplain: an error of the cluster says what it means for the
// command, naming the context: no Shim API (the CRD is not installed), a
// refusal of the user's rights; others pass as they are.
func TestExplain(t *testing.T) {
	o := newOptions(genericiooptions.NewTestIOStreamsDiscard())
	ctx := "prod"
	o.config.Context = &ctx
	noCRD := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "containerd.x-k8s.io", Kind: "Shim"}, SearchedVersions: []string{"v1alpha1"}}
	other := errors.New("something else")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{noCRD, `the Shim API (shims.containerd.x-k8s.io) is not installed in the cluster of context "prod": install shimkit's chart`},
		{other, "something else"},
	} {
		got := o.explain(tc.err)
		if !strings.Contains(got.Error(), tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("explain(%v) = %v, want %q wrapping it", tc.err, got, tc.want)
		}
	}
	if o.explain(nil) != nil {
		t.Error("explain(nil) is not nil")
	}
}
