package operator

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions are the manager cache settings the reconciler is built for:
// Jobs watched in namespace only (where its RBAC allows), and Jobs and
// Nodes trimmed to what it reads (TrimJob, TrimNode), which keeps the
// operator's memory down at thousands of nodes.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}: {Namespaces: map[string]cache.Config{namespace: {}}, Transform: TrimJob},
		&corev1.Node{}: {Transform: TrimNode},
	}}
}

// TrimJob is the cache transform of the installer Jobs: it keeps their
// metadata (without managed fields), their pod template's nodeName and
// their status, and drops the rest of the pod template (the plan, the
// volumes, the container), most of a Job's size.
func TrimJob(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		j.ManagedFields = nil
		j.Spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeName: j.Spec.Template.Spec.NodeName}}
	}
	return obj, nil
}

// TrimNode is the cache transform of Nodes: it drops their managed fields
// and the images list (tens of kilobytes per node on real clusters),
// which the reconciler never reads.
func TrimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields = nil
		n.Status.Images = nil
	}
	return obj, nil
}
