package nodejob

import (
	"encoding/json"
	"fmt"
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

// The kubelet's waiting reasons of a container whose image it cannot get.
var pullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// PullFailure returns the failure of the plan's Job when its pod waits
// for an image the kubelet could not pull (an init container's, an image
// volume's, the installer's own): ReasonUnauthorized when the registry
// refused the node's credentials, ReasonImagePullFailed otherwise (not
// found, unreachable), with the kubelet's reason and message. nil while
// no container of the pods waits for a pull that failed.
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
			res.Message = fmt.Sprintf("the kubelet of node %s cannot pull %s for container %s: %s: %s", pod.Spec.NodeName, cs.Image, cs.Name, w.Reason, w.Message)
			return res
		}
	}
	return nil
}

// unauthorized tells a registry's refusal of the credentials from the
// kubelet's message (the runtime's error text: the reason crosses a
// process boundary as text, as containerd's errdefs do over gRPC).
func unauthorized(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"401 unauthorized", "403 forbidden", "unauthorized", "authorization failed", "failed to authorize", "denied"} {
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
