package e2e

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// The mixed-runtime scenario's Shims and their nodes' pool.
const (
	ociShim    = "oci-mix"
	v2Shim     = "v2-only"
	vmShim     = "runcvm"
	brokenShim = "oci-broken"
	crioPool   = "crio-mix"
)

// testCRIOFleet: one Shim over a fleet that mixes containerd and CRI-O,
// through the operator: a containerd node and a CRI-O node (kubelet on
// crio.service) join; a Shim of an OCI runtime (runc as a bundle file,
// run through BinaryName: containerd's runc shim on one, an oci handler on
// the other) rolls out under maxUpdate 1 to both, each node getting its
// runtime's config, the canary run by each kubelet; a Shim of a shim v2
// skips the CRI-O node, RuntimeNotSupported, with no Job there; a Shim of
// a shim v2 that lists cri-o (containerd 1.6's runc shim, Debian's, under
// a wrapper named for the handler) is a vm handler there, its canary run
// by the kubelet; a Shim whose runtime binary is not executable is
// refused on the CRI-O node before CRI-O is restarted (ArtifactInvalid:
// CRI-O would drop the handler silently); an admin's drop-in in
// crio.conf.d stays untouched throughout; and the deletion leaves
// /etc/crio byte for byte as it was.
func testCRIOFleet(t *testing.T, c *testutil.Cluster, dump *dumper, images []string) {
	ctx := context.Background()
	pool := map[string]string{poolLabel: crioPool}
	cd := c.AddNode(t, testutil.JoinOptions{Images: images, Labels: pool})
	crio := c.AddNode(t, testutil.JoinOptions{CRIO: true, Images: images, Labels: pool})
	dump.onFailure(t)
	etc := crio.Local("/etc/crio")
	// An admin's drop-in with a handler of their own (CRI-O loads it at
	// the first restart).
	if err := os.WriteFile(crio.Local("/etc/crio/crio.conf.d/50-admin.conf"), []byte("[crio.runtime.runtimes.admin-rt]\nruntime_path = \"/usr/bin/runc\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.Tree(t, etc)

	shims := mixedFleetShims(t, c, crio, pool)
	start := time.Now()
	for _, s := range shims {
		if err := c.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 180*time.Second, "oci-mix on both nodes, runcvm on the CRI-O node, v2-only skipping it", func() bool {
		a, b, v := getShimStatus(t, c, ociShim), getShimStatus(t, c, v2Shim), getShimStatus(t, c, vmShim)
		return a.UpdatedNodes == 2 && meta.IsStatusConditionTrue(a.Conditions, v1alpha1.ConditionReady) && b.SkippedNodes == 1 &&
			v.UpdatedNodes == 1 && meta.IsStatusConditionTrue(v.Conditions, v1alpha1.ConditionReady)
	})
	t.Logf("oci-mix on a containerd and a CRI-O node, runcvm on the CRI-O node, in %v", time.Since(start).Round(time.Second))
	assertMixedFleet(t, c, cd, crio)
	shims = append(shims, brokenRuntimeShim(t, c, crio, shims[0]))

	for _, s := range shims {
		if err := c.Client.Delete(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 180*time.Second, "the four Shims gone", func() bool {
		l := &v1alpha1.ShimList{}
		return c.Client.List(ctx, l) == nil && !slices.ContainsFunc(l.Items, func(s v1alpha1.Shim) bool {
			return slices.Contains([]string{ociShim, v2Shim, vmShim, brokenShim}, s.Name)
		})
	})
	if after := testutil.Tree(t, etc); !maps.Equal(before, after) {
		t.Errorf("/etc/crio after the rollout and the deletion:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// mixedFleetShims are the scenario's Shims: oci-mix (the node's runc as
// an OCI runtime, on the pool, maxUpdate 1), v2-only (a shim v2 on the
// CRI-O node, containerd only by default) and runcvm (a shim v2 listing
// cri-o: a wrapper named for the handler running the CRI-O node's Debian
// containerd 1.6 runc shim).
func mixedFleetShims(t *testing.T, c *testutil.Cluster, crio testutil.ClusterNode, pool map[string]string) []*v1alpha1.Shim {
	t.Helper()
	url, a := serveNodeRunc(t, c, crio, "runc", "/oci-mix.tar.gz")
	oci := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: ociShim}, Spec: v1alpha1.ShimSpec{
		NodeSelector:    pool,
		FetchStrategy:   v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, SHA256: a.SHA256}},
		Files:           []v1alpha1.BundleFile{{Path: "runc", Mode: ptr.To(int32(0o755))}},
		RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: ociShim, Handler: ociShim},
		RuntimeType:     "io.containerd.runc.v2",
		RuntimeOptions:  &runtime.RawExtension{Raw: []byte(`{"BinaryName":"$(BUNDLE_DIR)/runc"}`)},
		RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: ptr.To(intstr.FromInt32(1))}},
	}}
	v2 := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: v2Shim}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  map[string]string{"kubernetes.io/hostname": crio.Name},
		FetchStrategy: oci.Spec.FetchStrategy,
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: v2Shim, Handler: v2Shim},
	}}
	wrapper := "#!/bin/sh\nexec /usr/bin/containerd-shim-runc-v2 \"$@\"\n"
	va := testutil.NewArchive(t, testutil.ArchiveFile{Name: "containerd-shim-" + vmShim + "-v2", Mode: 0o755, Data: []byte(wrapper)})
	vm := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: vmShim}, Spec: v1alpha1.ShimSpec{
		NodeSelector:      map[string]string{"kubernetes.io/hostname": crio.Name},
		ContainerRuntimes: []string{v1alpha1.RuntimeCRIO},
		FetchStrategy:     v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: c.StartFileServer(t).Add("/runcvm.tar.gz", va.Data), SHA256: va.SHA256}},
		RuntimeClass:      v1alpha1.RuntimeClassSpec{Name: vmShim, Handler: vmShim},
	}}
	return []*v1alpha1.Shim{oci, v2, vm}
}

// assertMixedFleet checks each node's config and labels after the
// rollout, and v2-only's skip of the CRI-O node without a Job.
func assertMixedFleet(t *testing.T, c *testutil.Cluster, cd, crio testutil.ClusterNode) {
	t.Helper()
	assertLabelled(t, c, cd.Name, ociShim, true)
	assertLabelled(t, c, crio.Name, ociShim, true)
	assertLabelled(t, c, crio.Name, vmShim, true)
	for handler, kind := range map[string]string{ociShim: "oci", vmShim: "vm"} {
		dropIn, err := os.ReadFile(crio.Local("/etc/crio/crio.conf.d/90-shimkit-" + handler + ".conf"))
		if err != nil || !strings.Contains(string(dropIn), `runtime_type = "`+kind+`"`) {
			t.Errorf("the CRI-O node's drop-in of %s: %v\n%s", handler, err, dropIn)
		}
	}
	if !slices.ContainsFunc(slices.Collect(maps.Values(testutil.Tree(t, cd.Local("/etc/containerd")))), func(f string) bool {
		return strings.Contains(f, ociShim) && strings.Contains(f, "BinaryName")
	}) {
		t.Errorf("no file under the containerd node's /etc/containerd has the handler %s with its BinaryName", ociShim)
	}
	s := getShimStatus(t, c, v2Shim)
	if len(s.Skipped) != 1 || s.Skipped[0].Reason != v1alpha1.SkipRuntimeNotSupported || !slices.Equal(s.Skipped[0].Nodes, []string{crio.Name}) {
		t.Errorf("v2-only skipped %+v, want %s for RuntimeNotSupported", s.Skipped, crio.Name)
	}
	if jobs := installJobs(t, c, v2Shim); len(jobs) != 0 {
		t.Errorf("v2-only install Jobs on %v", jobs)
	}
}

// brokenRuntimeShim creates a Shim like oci, its runtime binary placed
// without the execute bit, on the CRI-O node alone, and waits for the
// node's refusal: ArtifactInvalid (CRI-O would drop the handler and start
// without it), no drop-in, crio.service not restarted.
func brokenRuntimeShim(t *testing.T, c *testutil.Cluster, crio testutil.ClusterNode, oci *v1alpha1.Shim) *v1alpha1.Shim {
	t.Helper()
	pid := crio.UnitProp(t, "crio", "MainPID")
	broken := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: brokenShim}, Spec: *oci.Spec.DeepCopy()}
	broken.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": crio.Name}
	broken.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: brokenShim, Handler: brokenShim}
	broken.Spec.Files = []v1alpha1.BundleFile{{Path: "runc", Mode: ptr.To(int32(0o644))}}
	if err := c.Client.Create(context.Background(), broken); err != nil {
		t.Fatal(err)
	}
	var f v1alpha1.NodeFailure
	waitFor(t, 120*time.Second, "oci-broken refused on the CRI-O node", func() bool {
		s := getShimStatus(t, c, brokenShim)
		if len(s.FailingNodes) == 1 {
			f = s.FailingNodes[0]
		}
		return len(s.FailingNodes) == 1
	})
	t.Logf("oci-broken on %s: %s: %s", f.Node, f.Reason, f.Message)
	if f.Node != crio.Name || f.Reason != string(plan.ReasonArtifactInvalid) {
		t.Errorf("oci-broken failing %+v, want %s ArtifactInvalid", f, crio.Name)
	}
	if _, err := os.Stat(crio.Local("/etc/crio/crio.conf.d/90-shimkit-" + brokenShim + ".conf")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("oci-broken's drop-in: %v", err)
	}
	if now := crio.UnitProp(t, "crio", "MainPID"); now != pid {
		t.Errorf("crio.service restarted for oci-broken: main pid %s, then %s", pid, now)
	}
	return broken
}
