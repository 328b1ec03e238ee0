package nodejob_test

import (
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

func TestPullFailure(t *testing.T) {
	p := plan.New(plan.ShimRef{Name: "demo", UID: "uid-demo"}, plan.OpInstall)
	p.Node, p.SpecHash = "node-1", "0123456789abcdef"
	waiting := func(init bool, reason, msg string) corev1.Pod {
		pod := corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-1"}}
		cs := corev1.ContainerStatus{Name: "image-demo", Image: "shims.example.invalid/demo@sha256:ab", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
		if init {
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{cs}
		} else {
			cs.Name = nodejob.Container
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		}
		return pod
	}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want plan.Reason // "": none
	}{
		{"starting", waiting(false, "ContainerCreating", ""), ""},
		{"pulling", waiting(true, "PodInitializing", ""), ""},
		{"not found", waiting(true, "ErrImagePull", `failed to pull and unpack image "shims.example.invalid/demo@sha256:ab": failed to resolve reference: shims.example.invalid/demo@sha256:ab: not found`), plan.ReasonImagePullFailed},
		{"refused", waiting(false, "ImagePullBackOff", `Back-off pulling image: failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://10.213.0.1:5000/token: 401 Unauthorized`), plan.ReasonUnauthorized},
		{"a bad name", waiting(false, "InvalidImageName", "Failed to apply default image tag"), plan.ReasonImagePullFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := nodejob.PullFailure([]corev1.Pod{tc.pod}, p)
			if tc.want == "" {
				if res != nil {
					t.Fatalf("a failure while the pod starts: %+v", res)
				}
				return
			}
			if res == nil || res.Reason != tc.want || res.Outcome != plan.Failed || res.Shim.Name != "demo" || res.SpecHash != p.SpecHash ||
				!strings.Contains(res.Message, "node-1") || !strings.Contains(res.Message, "shims.example.invalid/demo@sha256:ab") {
				t.Fatalf("result %+v, want %s", res, tc.want)
			}
			// The result goes onto the Job, which the patch ends; it is
			// read back as the Job's result where no pod wrote one.
			data, err := nodejob.FailPatch(res)
			if err != nil {
				t.Fatal(err)
			}
			var patch struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Spec     batchv1.JobSpec   `json:"spec"`
			}
			if err := json.Unmarshal(data, &patch); err != nil {
				t.Fatal(err)
			}
			if patch.Spec.ActiveDeadlineSeconds == nil || *patch.Spec.ActiveDeadlineSeconds != 1 {
				t.Errorf("the patch does not end the Job: %s", data)
			}
			job := &batchv1.Job{ObjectMeta: patch.Metadata}
			if back := nodejob.JobResult(job, []corev1.Pod{tc.pod}, "demo"); back == nil || back.Reason != res.Reason || back.Message != res.Message {
				t.Errorf("read back %+v, want %+v", back, res)
			}
		})
	}
}

// TestPullFailureImageVolume: on Kubernetes 1.35+ the kubelet pulls a
// pod's image volumes before its containers and fails every container
// mounting one whose pull failed with that pull's reason and message
// (kuberuntime toKubeContainerImageVolumes); the waiting container is the
// installer, whose status names the installer's image. The failure names
// the image that failed: the Shim's, as the kubelet's message does, or
// the installer's own when that one failed.
func TestPullFailureImageVolume(t *testing.T) {
	const (
		installer = "ghcr.io/shimkit/installer:v0.9.0"
		shimImage = "shims.example.invalid/demo@sha256:ab"
	)
	p := plan.New(plan.ShimRef{Name: "demo", UID: "uid-demo"}, plan.OpInstall)
	p.Node, p.SpecHash = "node-1", "0123456789abcdef"
	// pod is the installer's pod with the Shim's image ref as an image
	// volume (WithImages, as Build makes it), the installer waiting.
	pod := func(ref, reason, msg string) corev1.Pod {
		q := *p
		q.Artifact = &plan.Artifact{Type: plan.SourceImage, Reference: ref, Path: nodejob.ImageDir("demo")}
		spec := corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: nodejob.Container, Image: installer}}}
		nodejob.WithImages(&spec, []*plan.NodePlan{&q}, nodejob.Spec{Image: installer, ImageWay: nodejob.ImageVolume})
		return corev1.Pod{Spec: spec, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: nodejob.Container, Image: installer,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}}}
	}
	for _, tc := range []struct {
		name   string
		pod    corev1.Pod
		want   plan.Reason
		names  string // the image the message must name
		absent string // an image it must not name as the failed one
	}{
		{"volume not found", pod(shimImage, "ErrImagePull",
			`rpc error: code = NotFound desc = failed to pull and unpack image "shims.example.invalid/demo@sha256:ab": failed to resolve reference "shims.example.invalid/demo@sha256:ab": shims.example.invalid/demo@sha256:ab: not found`),
			plan.ReasonImagePullFailed, "cannot pull " + shimImage + " (image volume ", "cannot pull " + installer},
		{"volume refused, backing off", pod(shimImage, "ImagePullBackOff",
			`Back-off pulling image "shims.example.invalid/demo@sha256:ab": ErrImagePull: failed to pull and unpack image "shims.example.invalid/demo@sha256:ab": failed to resolve reference "shims.example.invalid/demo@sha256:ab": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://10.213.0.1:5000/token?scope=repository%3Ademo%3Apull: 401 Unauthorized`),
			plan.ReasonUnauthorized, "cannot pull " + shimImage + " (image volume ", "cannot pull " + installer},
		{"a Docker Hub volume, normalized by containerd", pod("shimkit/spin@sha256:cd", "ErrImagePull",
			`rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/shimkit/spin@sha256:cd": failed to resolve reference "docker.io/shimkit/spin@sha256:cd": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`),
			plan.ReasonUnauthorized, "cannot pull shimkit/spin@sha256:cd (image volume ", "cannot pull " + installer},
		{"the registry unavailable", pod(shimImage, "RegistryUnavailable",
			`image pull failed for shims.example.invalid/demo@sha256:ab because the registry is unavailable: dial tcp 10.213.0.1:5000: connect: connection refused`),
			plan.ReasonImagePullFailed, "cannot pull " + shimImage + " (image volume ", "cannot pull " + installer},
		{"the installer's own image", pod(shimImage, "ErrImagePull",
			`rpc error: code = NotFound desc = failed to pull and unpack image "ghcr.io/shimkit/installer:v0.9.0": failed to resolve reference "ghcr.io/shimkit/installer:v0.9.0": ghcr.io/shimkit/installer:v0.9.0: not found`),
			plan.ReasonImagePullFailed, "cannot pull " + installer + " for container", shimImage},
		{"a message naming no image", pod(shimImage, "ErrImagePull", "rpc error: code = DeadlineExceeded desc = context deadline exceeded"),
			plan.ReasonImagePullFailed, "cannot pull " + installer + " or " + shimImage + " (image volume ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := nodejob.PullFailure([]corev1.Pod{tc.pod}, p)
			if res == nil || res.Reason != tc.want || res.Outcome != plan.Failed {
				t.Fatalf("result %+v, want %s", res, tc.want)
			}
			if !strings.Contains(res.Message, tc.names) || tc.absent != "" && strings.Contains(res.Message, tc.absent) ||
				!strings.Contains(res.Message, "node node-1") || !strings.Contains(res.Message, "container "+nodejob.Container) {
				t.Errorf("message %q, want it to name %q (not %q)", res.Message, tc.names, tc.absent)
			}
		})
	}
}

// TestPullFailureUnauthorized: the registries' refusals of a node's
// credentials, as containerd and the kubelet phrase them, are
// Unauthorized; anything else, a node's own "permission denied" among
// them, is ImagePullFailed.
func TestPullFailureUnauthorized(t *testing.T) {
	p := plan.New(plan.ShimRef{Name: "demo", UID: "uid-demo"}, plan.OpInstall)
	p.Node = "node-1"
	const img = `failed to pull and unpack image "registry.example.com/shims/demo@sha256:ab": `
	for _, tc := range []struct {
		name string
		msg  string
		want plan.Reason
	}{
		{"token endpoint 401", img + `failed to resolve reference "registry.example.com/shims/demo@sha256:ab": failed to authorize: failed to fetch oauth token: unexpected status from POST request to https://registry.example.com/token: 401 Unauthorized`, plan.ReasonUnauthorized},
		{"registry 403", img + `failed to resolve reference "registry.example.com/shims/demo@sha256:ab": unexpected status from HEAD request to https://registry.example.com/v2/shims/demo/manifests/sha256:ab: 403 Forbidden`, plan.ReasonUnauthorized},
		{"distribution DENIED", img + `failed to copy: httpReadSeeker: failed open: unexpected status code https://registry.example.com/v2/shims/demo/blobs/sha256:ef: 403 Forbidden - Server message: denied: requested access to the resource is denied`, plan.ReasonUnauthorized},
		{"Artifact Registry denied", img + `failed to resolve reference "europe-docker.pkg.dev/p/shims/demo@sha256:ab": unexpected status from HEAD request: denied: Permission "artifactregistry.repositories.downloadArtifacts" denied on resource "projects/p/locations/europe/repositories/shims" (or it may not exist)`, plan.ReasonUnauthorized},
		{"ACR unauthorized", `Back-off pulling image "example.azurecr.io/shims/demo@sha256:ab": ErrImagePull: ` + img + `failed to resolve reference: unexpected status: unauthorized: authentication required`, plan.ReasonUnauthorized},
		{"Docker Hub pull access denied", img + `failed to resolve reference "docker.io/shims/demo@sha256:ab": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`, plan.ReasonUnauthorized},
		{"a node's file permission denied", img + `failed to extract layer sha256:ef: mount callback failed on /var/lib/containerd/tmpmounts/containerd-mount4242: mkdir /var/lib/containerd/tmpmounts/containerd-mount4242/bin: permission denied: unknown`, plan.ReasonImagePullFailed},
		{"a node's file permission denied, last", img + `failed to prepare extraction snapshot "extract-1": open /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/metadata.db: permission denied`, plan.ReasonImagePullFailed},
		{"not found", img + `failed to resolve reference "registry.example.com/shims/demo@sha256:ab": registry.example.com/shims/demo@sha256:ab: not found`, plan.ReasonImagePullFailed},
		{"unreachable", img + `failed to do request: Head "https://registry.example.com/v2/shims/demo/manifests/sha256:ab": dial tcp: lookup registry.example.com: no such host`, plan.ReasonImagePullFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
				Name: "image-demo", Image: "registry.example.com/shims/demo@sha256:ab",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: tc.msg}},
			}}}}
			if res := nodejob.PullFailure([]corev1.Pod{pod}, p); res == nil || res.Reason != tc.want {
				t.Errorf("result %+v, want %s", res, tc.want)
			}
		})
	}
}
