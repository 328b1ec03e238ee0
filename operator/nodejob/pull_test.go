package nodejob_test

import (
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/nodejob"
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
