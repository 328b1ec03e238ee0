package nodejob

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
)

// LabelControllerUID is set by the Job controller on a Job's pods: it
// selects them (the pods ResultOf reads: results.Pods).
const LabelControllerUID = "batch.kubernetes.io/controller-uid"

// ResultOf returns the NodeResult of the shim named shim that the
// installer wrote as the termination message of the newest of the Job's
// pods that has one (a batch Job's is a NodeResultList; a single result
// is the Job's whole answer, as one for a plan the installer could not
// read names no shim), or nil when none is readable (pods gone, killed
// before writing, an older installer).
func ResultOf(pods []corev1.Pod, shim string) *plan.NodeResult {
	var best *plan.NodeResult
	var bestPod *corev1.Pod
	for i := range pods {
		pod := &pods[i]
		res := podResult(pod, shim)
		if res == nil || bestPod != nil && !newerPod(pod, bestPod) {
			continue
		}
		best, bestPod = res, pod
	}
	return best
}

// podResult decodes the shim's result from the installer container's
// termination message.
func podResult(pod *corev1.Pod, shim string) *plan.NodeResult {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != Container {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil || t.Message == "" {
				continue
			}
			rs, err := plan.DecodeResults([]byte(t.Message))
			if err != nil {
				continue
			}
			for _, res := range rs {
				if len(rs) == 1 || res.Shim.Name == shim {
					return res
				}
			}
		}
	}
	return nil
}

// NewestPod is the Job's pod the installer ran last (nil: none), by
// creation, then name: the one whose log and result count.
func NewestPod(pods []corev1.Pod) *corev1.Pod {
	var newest *corev1.Pod
	for i := range pods {
		if newest == nil || newerPod(&pods[i], newest) {
			newest = &pods[i]
		}
	}
	return newest
}

func newerPod(a, b *corev1.Pod) bool {
	return a.CreationTimestamp.After(b.CreationTimestamp.Time) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name > b.Name
}
