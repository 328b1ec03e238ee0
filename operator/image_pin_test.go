package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// imagePulls stands in for the kubelets of a fleet whose Shim is an image
// (fetchStrategy.type image): for each Job it pulls the image the pod
// names, as a kubelet would, an image volume's or the copy's init
// container's, from the test registry, and reports the install of the
// digest it pulled. It records, per node, the references pulled.
type imagePulls struct {
	mu     sync.Mutex
	pulled map[string][]string // node → image references, in order
}

// runner is the fleet's pod runner (startFleetRunning).
func (k *imagePulls) runner(t *testing.T) func(*fleet) func(context.Context, *batchv1.Job) testutil.PodRun {
	return func(*fleet) func(context.Context, *batchv1.Job) testutil.PodRun {
		return func(ctx context.Context, j *batchv1.Job) testutil.PodRun {
			run := k.pull(ctx, j)
			if run.ExitCode != 0 {
				t.Logf("Job %s: %s", j.Name, run.Message)
			}
			return run
		}
	}
}

// pull pulls the images of the Job's plans (one Job may carry several
// Shims' plans for its node), each of which the pod must name, and
// reports each plan's install of the digest pulled.
func (k *imagePulls) pull(ctx context.Context, j *batchv1.Job) testutil.PodRun {
	node := j.Spec.Template.Spec.NodeName
	plans, err := plan.DecodePlans([]byte(j.Spec.Template.Annotations[nodejob.PlanAnnotation]))
	if err != nil {
		return testutil.PodRun{ExitCode: 2, Message: fmt.Sprintf("the Job's plan: %v", err)}
	}
	named := podImages(j.Spec.Template.Spec)
	var results []*plan.NodeResult
	for _, p := range plans {
		if p.Artifact == nil || p.Artifact.Type != plan.SourceImage || !slices.Contains(named, p.Artifact.Reference) {
			return testutil.PodRun{ExitCode: 2, Message: fmt.Sprintf("the pod names %v, not the image of plan %s: %+v", named, p.Shim.Name, p.Artifact)}
		}
		ref := p.Artifact.Reference
		k.mu.Lock()
		if k.pulled == nil {
			k.pulled = map[string][]string{}
		}
		k.pulled[node] = append(k.pulled[node], ref)
		k.mu.Unlock()
		repo, r, err := fetch.NewRepository(ref, fetch.RegistryOptions{PlainHTTP: true})
		if err != nil {
			return testutil.PodRun{ExitCode: 2, Message: fmt.Sprintf("image %q: %v", ref, err)}
		}
		desc, err := fetch.ResolveIn(ctx, repo, r)
		if err != nil {
			return testutil.PodRun{ExitCode: 2, Message: fmt.Sprintf("pull %s: %v", ref, err)}
		}
		res := plan.NewResult(p)
		res.Outcome, res.Digest = plan.Succeeded, desc.Digest.String()
		results = append(results, res)
	}
	data, err := plan.EncodeResults(results, plan.MaxTerminationMessage)
	if err != nil {
		return testutil.PodRun{ExitCode: 2, Message: err.Error()}
	}
	return testutil.PodRun{Message: string(data)}
}

// refs returns each node's pulled references.
func (k *imagePulls) refs() map[string][]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string][]string{}
	for n, rs := range k.pulled {
		out[n] = append([]string(nil), rs...)
	}
	return out
}

// podImages are the images an installer pod mounts (image volumes) or
// copies (init containers, but for the copier of the installer's own).
func podImages(pod corev1.PodSpec) []string {
	var out []string
	for _, v := range pod.Volumes {
		if v.Image != nil {
			out = append(out, v.Image.Reference)
		}
	}
	for _, c := range pod.InitContainers {
		if c.Name != "copier" {
			out = append(out, c.Image)
		}
	}
	return out
}

// TestMovedImageTagStaysPinned is TestMovedTagStaysPinned for a Shim of
// fetchStrategy.type image: a tag moved while the first node installs
// does not split the fleet: every node's pod names image@digest, the
// digest the operator resolved first, which every node installs. The move
// is picked up only when the resolve annotation changes, and then rolls
// out as an upgrade, one node at a time.
func TestMovedImageTagStaysPinned(t *testing.T) {
	env := startCluster(t)
	reg := testutil.StartRegistry(t, "", "")
	push := func(v string) string {
		return reg.PushImage(t, "shims/pinimg", "stable", map[string][]byte{
			"containerd-shim-pinimg-v2": []byte("#!/bin/sh\n"), "VERSION": []byte(v + "\n"),
		})
	}
	d1 := push("1")
	pulls := &imagePulls{}
	f := startFleetRunning(t, env, 3, pulls.runner(t))
	var d2 string
	f.afterFirst = func() { d2 = push("2") }
	startOperator(t, env)
	ref := reg.Host + "/shims/pinimg:stable"
	shim := pinShim("pinimg", v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: ref, PlainHTTP: true}})
	if err := env.Client.Create(context.Background(), shim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range eventNotes(t, env.Client, "pinimg", "Warning") {
			t.Log("warning:", n)
		}
		t.Logf("digests d1 %s d2 %s reported %v pulled %v", d1, d2, f.reported, pulls.refs())
	})
	s := readyAt(t, env.Client, "pinimg", d1)
	f.assertAll(t, 3, d1)
	if d2 == "" || d2 == d1 {
		t.Fatalf("the tag did not move during the rollout (%s)", d2)
	}
	first := s.Status.SpecHash
	assertPulled := func(want string, n int) {
		t.Helper()
		refs := pulls.refs()
		if len(refs) != 3 {
			t.Errorf("%d nodes pulled, want 3: %v", len(refs), refs)
		}
		for node, rs := range refs {
			if len(rs) != n || rs[n-1] != reg.Host+"/shims/pinimg@"+want {
				t.Errorf("node %s pulled %v, want %s/shims/pinimg@%s last of %d", node, rs, reg.Host, want, n)
			}
		}
	}
	assertPulled(d1, 1)

	annotateResolve(t, env.Client, "pinimg", "1")
	s = readyAt(t, env.Client, "pinimg", d2)
	f.assertAll(t, 3, d2)
	assertPulled(d2, 2)
	if s.Status.SpecHash == first {
		t.Errorf("the new digest kept the spec hash %s", first)
	}
	if f.maxRun > 1 {
		t.Errorf("%d installers ran at once, maxUpdate is 1", f.maxRun)
	}
	if s.Status.Artifact.ResolveRequest != "1" || s.Status.Artifact.Source != ref || !strings.HasPrefix(s.Status.Artifact.Digest, "sha256:") {
		t.Errorf("status.artifact = %+v", s.Status.Artifact)
	}
}
