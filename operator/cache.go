package operator

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/workload"
)

// CacheOptions are the manager cache settings the reconciler is built for:
// Jobs watched in namespace only (where its RBAC allows), and Jobs and
// Nodes trimmed to what it reads (TrimJob, TrimNode), which keeps the
// operator's memory down at thousands of nodes. For the health gate
// (package workload), Pods outside namespace are trimmed (workload.TrimPod) and indexed
// by RuntimeClass, and only the FailedCreatePodSandBox Events are cached,
// trimmed (workload.TrimEvent); neither is watched until a Shim's gate first reads
// them. (A host operator whose own controllers read whole Pods, or other
// Events, through the same cache would leave those out, and give the
// reconciler a client reading Pods and Events from the API server:
// client.CacheOptions.DisableFor.)
func CacheOptions(namespace string) cache.Options {
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}: {Namespaces: map[string]cache.Config{namespace: {}}, Transform: TrimJob},
		&corev1.Node{}: {Transform: TrimNode},
	}}
	workload.AddToCache(&opts, namespace)
	return opts
}

// TrimJob is the cache transform of the installer Jobs: it keeps their
// metadata (without managed fields), their pod template's nodeName and,
// of their status, the Complete and Failed conditions and the completion
// time; it drops the rest of the spec (the pod template with the plan,
// the volumes and the container, the selector, the pod failure policy),
// most of a Job's size, and the rest of the status (counts, start time,
// the Job controller's other conditions), none of which the reconciler
// reads.
func TrimJob(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		j.ManagedFields = nil
		j.Spec = batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeName: j.Spec.Template.Spec.NodeName}}}
		var conds []batchv1.JobCondition
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed {
				conds = append(conds, c)
			}
		}
		j.Status = batchv1.JobStatus{Conditions: conds, CompletionTime: j.Status.CompletionTime}
	}
	return obj, nil
}

// TrimNode is the cache transform of Nodes: it keeps their metadata
// (without managed fields), their spec (the taints: the startup taint is
// patched from the cached node) and, of their status, the operating
// system, architecture, container runtime and kubelet version the kubelet
// reports (imageWay reads the versions), its machine and boot IDs and its
// runtime handlers. It drops the images (tens of kilobytes per node on
// real clusters), the conditions, addresses, capacity and the rest of the
// system info, which the reconciler never reads.
func TrimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields = nil
		info := n.Status.NodeInfo
		n.Status = corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: info.OperatingSystem, Architecture: info.Architecture, ContainerRuntimeVersion: info.ContainerRuntimeVersion,
				KubeletVersion: info.KubeletVersion, MachineID: info.MachineID, SystemUUID: info.SystemUUID, BootID: info.BootID, OSImage: info.OSImage},
			RuntimeHandlers: n.Status.RuntimeHandlers,
		}
	}
	return obj, nil
}
