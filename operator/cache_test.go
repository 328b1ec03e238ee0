package operator_test

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/operator"
)

// TestCacheTrims: a cached Job keeps its metadata, its pod's nodeName,
// its Complete and Failed conditions and its completion time, and loses
// the rest of its spec and status; a cached Node keeps its metadata but
// the managed fields, its spec, its runtime handlers and the operating
// system, architecture and container runtime of its system info.
func TestCacheTrims(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, ManagedFields: managed},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"plan": "{...}"}},
			Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "installer"}}, Volumes: []corev1.Volume{{Name: "etc"}}},
		}},
		Status: batchv1.JobStatus{Succeeded: 1, CompletionTime: &metav1.Time{}, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}, {Type: batchv1.JobComplete, Status: corev1.ConditionTrue}, {Type: batchv1.JobFailed, Status: corev1.ConditionFalse},
		}},
	}
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
	out, err := operator.TrimJob(job)
	j := out.(*batchv1.Job)
	if err != nil || j.Spec.Template.Spec.NodeName != "n1" || len(j.Spec.Template.Spec.Containers) != 0 || len(j.Spec.Template.Spec.Volumes) != 0 ||
		j.Spec.Template.Annotations != nil || j.ManagedFields != nil || j.Labels["a"] != "b" || j.Annotations["c"] != "d" || j.Spec.Selector != nil || j.Status.CompletionTime == nil ||
		len(j.Status.Conditions) != 2 || j.Status.Conditions[0].Type != batchv1.JobComplete || j.Status.Conditions[1].Type != batchv1.JobFailed {
		t.Errorf("trimmed Job %+v (%v)", j, err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}, ManagedFields: managed},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"x"}}}, RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "runc"}},
			NodeInfo:   corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64", ContainerRuntimeVersion: "containerd://2.2.9", KubeletVersion: "v1.36.3", KernelVersion: "6.1"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady}}, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	}
	out, err = operator.TrimNode(node)
	n := out.(*corev1.Node)
	if err != nil || n.ManagedFields != nil || n.Status.Images != nil || len(n.Spec.Taints) != 1 || len(n.Status.RuntimeHandlers) != 1 || n.Labels["a"] != "b" ||
		n.Status.NodeInfo != (corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64", ContainerRuntimeVersion: "containerd://2.2.9", KubeletVersion: "v1.36.3"}) || n.Status.Conditions != nil || n.Status.Capacity != nil {
		t.Errorf("trimmed Node %+v (%v)", n, err)
	}
}
