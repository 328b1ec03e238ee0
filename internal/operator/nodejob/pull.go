package nodejob

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
)

// ResultAnnotation is where the operator writes the result of a Job whose
// installer never ran: the kubelet could not pull an image the pod needs
// (PullFailure). It is read where the installer's own result is missing
// (AnnotatedResult).
const ResultAnnotation = plan.Group + "/result"

// The kubelet's waiting reasons of a container whose image it cannot get:
// its own image's or, on Kubernetes 1.35+, an image volume's it mounts (the
// kubelet pulls the pod's image volumes first and fails each container
// that mounts one whose pull failed with that pull's reason and message,
// the container's own image unpulled). RegistryUnavailable and
// SignatureValidationFailed are what the kubelet makes of a runtime's
// error so prefixed (k8s.io/cri-api/pkg/errors).
var pullReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"RegistryUnavailable": true, "SignatureValidationFailed": true,
}

// PullFailure returns the failure of the plan's Job when its pod waits
// for an image the kubelet could not pull (an init container's, an image
// volume's, the installer's own): ReasonUnauthorized when the registry
// refused the node's credentials, ReasonImagePullFailed otherwise (not
// found, unreachable), with the image that failed and the kubelet's
// reason and message. nil while no container of the pods waits for a
// pull that failed.
func PullFailure(pods []corev1.Pod, p *plan.NodePlan) *plan.NodeResult {
	for _, pod := range pods {
		statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
		for _, cs := range statuses {
			w := cs.State.Waiting
			if w == nil || !pullReasons[w.Reason] {
				continue
			}
			res := plan.NewResult(p)
			res.Outcome, res.Reason = plan.Failed, plan.ReasonImagePullFailed
			if unauthorized(w.Message) {
				res.Reason = plan.ReasonUnauthorized
			}
			res.Message = fmt.Sprintf("the kubelet of node %s cannot pull %s for container %s: %s: %s", pod.Spec.NodeName, failedImage(&pod, &cs, w.Message), cs.Name, w.Reason, w.Message)
			return res
		}
	}
	return nil
}

// failedImage names the image whose pull failed for the waiting container
// cs. The container's status names its own image, also when the kubelet
// failed it for an image volume it mounts; the kubelet's message names the
// image it pulled (its "Back-off pulling image" as the volume gives it,
// containerd's "failed to pull and unpack image" normalized), so the
// volume's image is the one the message names. Where the message names
// none of them, both the container's image and its volumes' are named.
func failedImage(pod *corev1.Pod, cs *corev1.ContainerStatus, msg string) string {
	var volumes []string
	for _, v := range mountedImageVolumes(pod, cs.Name) {
		if mentions(msg, v.Image.Reference) {
			return fmt.Sprintf("%s (image volume %s)", v.Image.Reference, v.Name)
		}
		volumes = append(volumes, fmt.Sprintf("%s (image volume %s)", v.Image.Reference, v.Name))
	}
	if len(volumes) == 0 || mentions(msg, cs.Image) {
		return cs.Image
	}
	return cs.Image + " or " + strings.Join(volumes, " or ")
}

// mountedImageVolumes returns the image volumes of the pod the named
// container mounts, in the pod's order.
func mountedImageVolumes(pod *corev1.Pod, container string) []corev1.Volume {
	var mounts []corev1.VolumeMount
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == container {
			mounts = c.VolumeMounts
			break
		}
	}
	var out []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil && slices.ContainsFunc(mounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name }) {
			out = append(out, v)
		}
	}
	return out
}

// mentions tells whether msg names the image ref, as given or as
// containerd normalizes it (docker.io/library/ for a bare name).
func mentions(msg, ref string) bool {
	if ref == "" {
		return false
	}
	return strings.Contains(msg, ref) || strings.Contains(msg, normalized(ref))
}

// normalized is ref with Docker Hub's implicit domain and library/
// namespace spelled out, as containerd writes references in its errors.
func normalized(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return ref
	default:
		return "docker.io/" + ref
	}
}

// unauthorized tells a registry's refusal of the credentials from the
// kubelet's message (the runtime's error text: the reason crosses a
// process boundary as text, as containerd's errdefs do over gRPC): HTTP
// 401/403, the distribution spec's UNAUTHORIZED and DENIED error codes
// ("unauthorized: ...", "denied: ..."), containerd's "failed to
// authorize", Docker Hub's "pull access denied" and a token's
// "insufficient_scope". A node's own "permission denied" (a file the
// runtime could not open or write) is not a registry's refusal.
func unauthorized(msg string) bool {
	m := strings.ReplaceAll(strings.ToLower(msg), "permission denied", "")
	for _, s := range []string{"401 unauthorized", "403 forbidden", "unauthorized", "authorization failed", "failed to authorize", "access denied", "denied:", "insufficient_scope"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// JobResult is the shim's result of the finished Job: the installer's,
// from its pods (ResultOf), or where it never ran the one the operator
// wrote on the Job (AnnotatedResult); nil when neither is there.
func JobResult(job *batchv1.Job, pods []corev1.Pod, shim string) *plan.NodeResult {
	if res := ResultOf(pods, shim); res != nil {
		return res
	}
	return AnnotatedResult(job, shim)
}

// AnnotatedResult returns the result of the named shim the operator wrote
// on the Job (ResultAnnotation), or nil.
func AnnotatedResult(job *batchv1.Job, shim string) *plan.NodeResult {
	data := job.Annotations[ResultAnnotation]
	if data == "" {
		return nil
	}
	rs, err := plan.DecodeResults([]byte(data))
	if err != nil {
		return nil
	}
	for _, r := range rs {
		if len(rs) == 1 || r.Shim.Name == shim {
			return r
		}
	}
	return nil
}

// FailPatch is the merge patch that fails a Job whose pod cannot start
// with res: the result as ResultAnnotation, and an active deadline
// already past, so that the Job controller ends it (DeadlineExceeded) and
// its pod, and the kubelet stops pulling.
func FailPatch(res *plan.NodeResult) ([]byte, error) {
	data, err := plan.EncodeResult(res, plan.MaxTerminationMessage)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{ResultAnnotation: string(data)}},
		"spec":     map[string]any{"activeDeadlineSeconds": 1},
	})
}
