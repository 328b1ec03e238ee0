package operator_test

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/operator"
)

// TestCacheTrims: a cached Job keeps its metadata, its pod's nodeName and
// its status, and loses the rest of its pod template; a cached Node keeps
// everything but its managed fields and images.
func TestCacheTrims(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, ManagedFields: managed},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"plan": "{...}"}},
			Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "installer"}}, Volumes: []corev1.Volume{{Name: "etc"}}},
		}},
		Status: batchv1.JobStatus{Succeeded: 1},
	}
	out, err := operator.TrimJob(job)
	j := out.(*batchv1.Job)
	if err != nil || j.Spec.Template.Spec.NodeName != "n1" || len(j.Spec.Template.Spec.Containers) != 0 || len(j.Spec.Template.Spec.Volumes) != 0 ||
		j.Spec.Template.Annotations != nil || j.ManagedFields != nil || j.Labels["a"] != "b" || j.Annotations["c"] != "d" || j.Status.Succeeded != 1 {
		t.Errorf("trimmed Job %+v (%v)", j, err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}, ManagedFields: managed},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"x"}}}, RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "runc"}},
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux"}},
	}
	out, err = operator.TrimNode(node)
	n := out.(*corev1.Node)
	if err != nil || n.ManagedFields != nil || n.Status.Images != nil || len(n.Spec.Taints) != 1 || len(n.Status.RuntimeHandlers) != 1 || n.Status.NodeInfo.OperatingSystem != "linux" || n.Labels["a"] != "b" {
		t.Errorf("trimmed Node %+v (%v)", n, err)
	}
}
