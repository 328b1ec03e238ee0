package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const (
	imgShim = "imgs"
	imgPool = "images"
	// mirrored is a registry name that does not resolve: only the nodes'
	// hosts.toml mirror serves it.
	mirrored = "shims.example.invalid"
	// credProvider is the kubelet's credential provider plugin
	// (internal/testutil/credprovider) and where it is on the nodes.
	credProvider    = "credprovider"
	credProviderDir = "/usr/local/lib/kubelet-credential-providers"
	credConfig      = "/etc/kubernetes/credential-providers.yaml"
)

// testImages: Shims as images, pulled by each node's kubelet, on two nodes
// of its own, containerd 2.2 (an image volume) and 1.7 (the copy), both
// reading registry hosts from certs.d and running a kubelet credential
// provider for the registry that asks for credentials:
//   - mirror: the Shim names shims.example.invalid/demo@sha256:..., a
//     name that does not resolve; the nodes' hosts.toml mirror it to the
//     open test registry; it installs on both, a pod of its RuntimeClass
//     runs on each, status.imageSources says which way each node went;
//     no pull secret exists;
//   - pinned: a tag the operator resolves, moved once resolved: every
//     node's Job pulls the digest resolved;
//   - credential provider: the image in the registry that asks for
//     credentials installs with what the kubelets' plugin gives (no
//     Secret); with the plugin gone from the 1.7 node, the next image
//     fails there with Unauthorized, at once, as a Warning Event of the
//     Shim too; neither its Job nor the cluster holds a pull secret;
//   - deleting the Shim leaves both nodes' files as they were.
func testImages(t *testing.T, c *testutil.Cluster, dump *dumper, images []string) {
	ctx := context.Background()
	matrix := testutil.ContainerdMatrix(t)
	open := c.StartRegistry(t, "", "")
	locked := c.StartRegistry(t, "shimkit", "e2e-secret")
	provider := buildCredProvider(t, locked)
	pool := map[string]string{poolLabel: imgPool}
	var joins []testutil.JoinOptions
	for _, b := range []testutil.ContainerdBuild{matrix[2], matrix[1]} {
		files := map[string][]byte{
			"/etc/containerd/config.toml":                                 testutil.WithRegistryHosts(testutil.ClusterContainerdConfig(b), b),
			testutil.RegistryHostsDir + "/" + mirrored + "/hosts.toml":    testutil.RegistryHosts("https://"+mirrored, "http://"+open.Host),
			testutil.RegistryHostsDir + "/" + open.Host + "/hosts.toml":   testutil.RegistryHosts("http://"+open.Host, "http://"+open.Host),
			testutil.RegistryHostsDir + "/" + locked.Host + "/hosts.toml": testutil.RegistryHosts("http://"+locked.Host, "http://"+locked.Host),
			credConfig: provider.config,
		}
		joins = append(joins, testutil.JoinOptions{Labels: pool, Containerd: &b, Files: files, Images: images,
			Executables: map[string][]byte{credProviderDir + "/" + credProvider: provider.binary},
			KubeletArgs: []string{"--image-credential-provider-config=" + credConfig, "--image-credential-provider-bin-dir=" + credProviderDir}})
	}
	nodes := c.AddNodes(t, joins...)
	dump.onFailure(t)
	volumeNode, copyNode := nodes[0], nodes[1]
	orig := map[string][]byte{}
	for _, n := range nodes {
		orig[n.Name], _ = os.ReadFile(n.Local("/etc/containerd/config.toml"))
	}

	// Mirror: a name only the nodes' mirror serves, pinned by digest.
	start := time.Now()
	d1 := open.PushImage(t, "demo", "v0", imgFiles("1"))
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: imgShim}, Spec: v1alpha1.ShimSpec{
		NodeSelector:    pool,
		FetchStrategy:   v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: mirrored + "/demo@" + d1}},
		RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: imgShim, Handler: imgShim},
		RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: ptr.To(intstr.FromString("100%"))}},
	}}
	if err := c.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	s := waitImageShim(t, c, "through the mirror", func(s v1alpha1.ShimStatus) bool { return s.UpdatedNodes == 2 })
	t.Logf("%s installed from %s/demo@%s through the nodes' mirror in %v", imgShim, mirrored, d1[:19], time.Since(start).Round(time.Second))
	want := []v1alpha1.ImageSourceNodes{{Way: nodejob.ImageCopy, Count: 1, Nodes: []string{copyNode.Name}}, {Way: nodejob.ImageVolume, Count: 1, Nodes: []string{volumeNode.Name}}}
	if !slices.EqualFunc(s.ImageSources, want, func(a, b v1alpha1.ImageSourceNodes) bool { return a.Way == b.Way && slices.Equal(a.Nodes, b.Nodes) }) {
		t.Errorf("status.imageSources %+v, want %+v", s.ImageSources, want)
	}
	for _, n := range nodes {
		runPodOn(t, c, "img-"+n.Name, n.Name, imgShim)
	}
	secrets := &corev1.SecretList{}
	if err := c.Client.List(ctx, secrets, client.MatchingFields{"type": string(corev1.SecretTypeDockerConfigJson)}); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) > 0 {
		t.Errorf("pull secrets in the cluster: %d", len(secrets.Items))
	}

	// Pinned: a tag resolved once; moved after, it changes nothing.
	d2 := open.PushImage(t, "demo", "v1", imgFiles("2"))
	updateSpec(t, c, imgShim, func(s *v1alpha1.ShimSpec) {
		s.FetchStrategy.Image = &v1alpha1.OCIFetch{Reference: open.Host + "/demo:v1", PlainHTTP: true, Insecure: true}
	})
	waitImageShim(t, c, "the tag resolved", func(s v1alpha1.ShimStatus) bool { return s.Artifact != nil && s.Artifact.Digest == d2 })
	d3 := open.PushImage(t, "demo", "v1", imgFiles("3")) // the tag moves
	s = waitImageShim(t, c, "the tag's digest on both nodes", func(s v1alpha1.ShimStatus) bool { return s.UpdatedNodes == 2 && s.Artifact.Digest == d2 })
	for _, n := range nodes {
		if ref := imageOfJob(t, c, n.Name, s.SpecHash); !strings.HasSuffix(ref, "@"+d2) {
			t.Errorf("%s pulled %s, want the pinned %s (the tag moved to %s)", n.Name, ref, d2, d3)
		}
	}

	// Credential provider: the registry asks for credentials, only the
	// kubelets' plugin has them.
	start = time.Now()
	d4 := locked.PushImage(t, "demo", "v4", imgFiles("4"))
	updateSpec(t, c, imgShim, func(s *v1alpha1.ShimSpec) {
		s.FetchStrategy.Image = &v1alpha1.OCIFetch{Reference: locked.Host + "/demo@" + d4}
	})
	waitImageShim(t, c, "the image of the registry that asks for credentials", func(s v1alpha1.ShimStatus) bool {
		return s.UpdatedNodes == 2 && strings.HasSuffix(s.Artifact.Digest, d4)
	})
	t.Logf("%s installed from %s with the kubelets' credential provider in %v", imgShim, locked.Host, time.Since(start).Round(time.Second))
	// Without the plugin the node's kubelet has no credentials.
	if err := os.Remove(copyNode.Local(credProviderDir + "/" + credProvider)); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	d5 := locked.PushImage(t, "demo", "v5", imgFiles("5"))
	updateSpec(t, c, imgShim, func(s *v1alpha1.ShimSpec) {
		s.FetchStrategy.Image = &v1alpha1.OCIFetch{Reference: locked.Host + "/demo@" + d5}
	})
	s = waitImageShim(t, c, copyNode.Name+" to fail Unauthorized", func(s v1alpha1.ShimStatus) bool {
		return slices.ContainsFunc(s.FailingNodes, func(f v1alpha1.NodeFailure) bool { return f.Node == copyNode.Name })
	})
	for _, f := range s.FailingNodes {
		if f.Node == copyNode.Name {
			t.Logf("%s failed %v after the spec: %s: %s", copyNode.Name, time.Since(start).Round(time.Second), f.Reason, f.Message)
			if f.Reason != string(plan.ReasonUnauthorized) || !strings.Contains(f.Message, locked.Host) {
				t.Errorf("%s failed with %s: %s; want Unauthorized naming %s", f.Node, f.Reason, f.Message, locked.Host)
			}
		}
	}
	// The failure is an Event of the Shim too, and the node had only its
	// kubelet's credentials: no pull secret on its Job, none in the cluster.
	waitFor(t, 60*time.Second, "a Warning InstallFailed Event of "+imgShim+" naming "+copyNode.Name+" and Unauthorized", func() bool {
		return slices.ContainsFunc(shimEvents(t, c, imgShim), func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && e.Reason == "InstallFailed" &&
				strings.Contains(e.Message, copyNode.Name) && strings.Contains(e.Message, string(plan.ReasonUnauthorized))
		})
	})
	failed := installJobsPulling(t, c, copyNode.Name, "@"+d5)
	if len(failed) == 0 {
		t.Errorf("no install Job of %s pulls %s", copyNode.Name, d5)
	}
	for _, j := range failed {
		if ps := j.Spec.Template.Spec.ImagePullSecrets; len(ps) > 0 {
			t.Errorf("the install Job %s of %s has imagePullSecrets %v, want the kubelet's credentials only", j.Name, copyNode.Name, ps)
		}
	}
	if err := c.Client.List(ctx, secrets, client.MatchingFields{"type": string(corev1.SecretTypeDockerConfigJson)}); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) > 0 {
		t.Errorf("pull secrets in the cluster after the credential provider's images: %d (%s/%s)", len(secrets.Items), secrets.Items[0].Namespace, secrets.Items[0].Name)
	}

	// Delete: both nodes as they were.
	for _, n := range nodes {
		_ = c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "img-" + n.Name}})
	}
	if err := c.Client.Delete(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 180*time.Second, imgShim+" gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(shim), &v1alpha1.Shim{}))
	})
	for _, n := range nodes {
		if cfg, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(cfg, orig[n.Name]) {
			t.Errorf("%s: config after the Shim's deletion:\n%s", n.Name, cfg)
		}
		if _, err := os.Stat(n.Local("/opt/shimkit")); !os.IsNotExist(err) {
			t.Errorf("%s: /opt/shimkit left: %v", n.Name, err)
		}
	}
}

// imgFiles are the files of the Shim's image, version v: the shim, a
// wrapper of the node's own runc shim (whatever its containerd).
func imgFiles(v string) map[string][]byte {
	return map[string][]byte{
		"containerd-shim-" + imgShim + "-v2": []byte("#!/bin/sh\nexec /usr/local/bin/containerd-shim-runc-v2 \"$@\"\n"),
		"VERSION":                            []byte(v + "\n"),
	}
}

// waitImageShim waits until the Shim's status (of its generation)
// satisfies ok, and returns it.
func waitImageShim(t *testing.T, c *testutil.Cluster, what string, ok func(v1alpha1.ShimStatus) bool) v1alpha1.ShimStatus {
	t.Helper()
	var s v1alpha1.ShimStatus
	waitFor(t, 180*time.Second, what, func() bool {
		s = getShimStatus(t, c, imgShim)
		return s.ObservedGeneration != 0 && ok(s)
	})
	return s
}

// imageOfJob is the image the install Job of the Shim at spec hash on the
// node mounts or copies.
func imageOfJob(t *testing.T, c *testutil.Cluster, node, hash string) string {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{
		jobview.LabelShim: imgShim, jobview.LabelNode: node, jobview.LabelOp: jobview.OpInstall, jobview.LabelSpecHash: hash,
	}); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("the install Job of %s at %s: %v (%d)", node, hash, err, len(jobs.Items))
	}
	ref := jobImage(jobs.Items[0].Spec.Template.Spec)
	if ref == "" {
		t.Fatalf("the install Job of %s mounts no image", node)
	}
	return ref
}

// jobImage is the Shim's image an installer pod mounts (an image volume)
// or copies (an init container other than the copier); "" for none.
func jobImage(pod corev1.PodSpec) string {
	for _, v := range pod.Volumes {
		if v.Image != nil {
			return v.Image.Reference
		}
	}
	for _, ic := range pod.InitContainers {
		if ic.Name != "copier" {
			return ic.Image
		}
	}
	return ""
}

// installJobsPulling are the Shim's install Jobs of the node whose image
// ends with suffix.
func installJobsPulling(t *testing.T, c *testutil.Cluster, node, suffix string) []batchv1.Job {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{
		jobview.LabelShim: imgShim, jobview.LabelNode: node, jobview.LabelOp: jobview.OpInstall,
	}); err != nil {
		t.Fatalf("the install Jobs of %s: %v", node, err)
	}
	var out []batchv1.Job
	for _, j := range jobs.Items {
		if strings.HasSuffix(jobImage(j.Spec.Template.Spec), suffix) {
			out = append(out, j)
		}
	}
	return out
}

// shimEvents are the core/v1 Events about the named Shim (cluster-scoped:
// its Events are in the default namespace, listed from all).
func shimEvents(t *testing.T, c *testutil.Cluster, name string) []corev1.Event {
	t.Helper()
	evs := &corev1.EventList{}
	if err := c.Client.List(context.Background(), evs, client.MatchingFields{"involvedObject.kind": "Shim", "involvedObject.name": name}); err != nil {
		t.Fatalf("the Events of Shim %s: %v", name, err)
	}
	return evs.Items
}

// credProviderFiles are the kubelet's credential provider plugin and its
// config, for the registry reg.
type credProviderFiles struct{ binary, config []byte }

func buildCredProvider(t *testing.T, reg *testutil.Registry) credProviderFiles {
	t.Helper()
	bin := testutil.GoBuild(t, "./internal/testutil/credprovider", filepath.Join(t.TempDir(), credProvider))
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: %s
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    matchImages: [%q]
    defaultCacheDuration: 1s
    args: [--registry, %q, --username, %q, --password, %q]
`, credProvider, reg.Host, reg.Host, reg.Username, reg.Password)
	return credProviderFiles{binary: data, config: []byte(config)}
}
