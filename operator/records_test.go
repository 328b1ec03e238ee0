package operator_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRecreatedShimStartsClean: a Shim refused on a node (Conflict: the
// node's config has a handler of its name that shimkit did not write) is
// deleted once the admin removed their handler, and the identical Shim is
// applied again (a new object). Nothing of the first outlives it: its
// failure record leaves the node with it, and the new Shim installs the
// node. A failure a predecessor left behind without its finalizer (on the
// other node) is not the new Shim's either: it is dropped, not obeyed.
// The real installer runs for each Job (offline: no containerd).
func TestRecreatedShimStartsClean(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	f := startFleet(t, env, 2)
	startOperator(t, env)
	srv := testutil.StartFileServer(t)
	cfg := f.root(nodeName(0)) + "/etc/containerd/config.toml"
	foreign := "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.demo2]\n  runtime_type = \"io.containerd.demo2.v2\"\n"
	if err := os.WriteFile(cfg, []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}

	batchShims(t, env.Client, srv, []string{"demo2"})
	waitFor(t, 60*time.Second, "demo2 refused on "+nodeName(0), func() (bool, string) {
		s := getShim(t, env.Client, "demo2")
		return len(s.Status.FailingNodes) == 1 && s.Status.FailingNodes[0].Reason == string(plan.ReasonConflict), fmt.Sprintf("%+v", s.Status)
	})
	first := getShim(t, env.Client, "demo2")
	if data, _ := os.ReadFile(cfg); string(data) != foreign {
		t.Fatalf("the refused install changed the config:\n%s", data)
	}

	// The admin removes their handler, deletes the Shim and applies it again.
	if err := os.WriteFile(cfg, []byte("version = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "demo2 gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for i := range 2 {
		if n := getNode(t, env.Client, nodeName(i)); nodelabel.HasAny(n, "demo2") {
			t.Errorf("%s keeps demo2's records after its deletion: labels %v, annotations %v", n.Name, n.Labels, n.Annotations)
		}
	}
	// What a predecessor deleted without its finalizer would have left.
	stale := `{"shimUID":"00000000-0000-0000-0000-00000000dead","op":"install","specHash":"x","reason":"Conflict","message":"old","time":"2026-11-01T00:00:00Z"}`
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, nodelabel.FailureKey("demo2"), stale)
	if err := env.Client.Patch(ctx, getNode(t, env.Client, nodeName(1)), client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}

	batchShims(t, env.Client, srv, []string{"demo2"})
	waitFor(t, 60*time.Second, "the new demo2 Ready", ready(env.Client, "demo2"))
	second := getShim(t, env.Client, "demo2")
	if second.UID == first.UID {
		t.Fatal("not a new Shim")
	}
	for i := range 2 {
		n := getNode(t, env.Client, nodeName(i))
		if ok, _ := nodelabel.State(n, "demo2"); !ok {
			t.Errorf("%s not installed by the new demo2: %v", n.Name, n.Labels)
		}
		if _, failed := n.Annotations[nodelabel.FailureKey("demo2")]; failed {
			t.Errorf("%s keeps a failure record: %s", n.Name, n.Annotations[nodelabel.FailureKey("demo2")])
		}
		if v := nodelabel.VerificationOf(n, "demo2", second.UID); v == nil || v.ShimUID != second.UID {
			t.Errorf("%s: verification %+v does not name the new Shim %s", n.Name, v, second.UID)
		}
	}
}
