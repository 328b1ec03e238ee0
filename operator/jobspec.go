package operator

import (
	"fmt"
	"path"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// The plan's way into the installer pod: an annotation of the pod
// template, mounted as a file by the downward API.
const (
	PlanAnnotation = plan.Group + "/plan"
	planDir        = "/etc/shimkit/plan"
	planFile       = planDir + "/plan.json"
	// resultPath is where the installer writes its plan.NodeResult: the
	// container's termination message.
	resultPath = corev1.TerminationMessagePathDefault
	// installerContainer is the name of the Job's one container.
	installerContainer = "installer"
)

// buildJob returns the Job that carries out the plan on its node.
func (r *Reconciler) buildJob(shim *v1alpha1.Shim, node *corev1.Node, p *plan.NodePlan, hash string) (*batchv1.Job, error) {
	o := r.opts
	doc, err := plan.Encode(p)
	if err != nil {
		return nil, fmt.Errorf("plan of Shim %s for node %s: %w", shim.Name, node.Name, err)
	}
	op := string(p.Operation)
	lbls := map[string]string{
		labelManagedBy: managedBy, labelShim: labelValue(shim.Name), labelNode: labelValue(node.Name), labelOp: op, labelSpecHash: hash,
	}
	annotations := map[string]string{annotationCreated: time.Now().UTC().Format(time.RFC3339Nano)}
	if p.Artifact != nil && p.Artifact.Digest != "" {
		annotations[annotationDigest] = p.Artifact.Digest
	}
	if c := planCanary(shim, p); c != "" {
		annotations[annotationCanary] = c
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName(shim.Name, node.Name, op, hash), Namespace: o.Namespace, Labels: lbls, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim"))},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(o.JobBackoffLimit),
			ActiveDeadlineSeconds:   ptr.To(int64(o.JobDeadline.Seconds())),
			TTLSecondsAfterFinished: ptr.To(int32(o.JobTTL.Seconds())),
			// The installer rolls back by itself; a rolled-back or failed
			// rollback, a bad plan and a refusal that retrying cannot
			// change (a Conflict, say) are final: the Job ends at once.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: plan.FinalExitCodes()},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls, Annotations: map[string]string{PlanAnnotation: string(doc)}},
				Spec:       installerPod(o, shim, node.Name, p),
			},
		},
	}, nil
}

// installerPod is the spec of the installer's pod for the plan on the
// node.
func installerPod(o Options, shim *v1alpha1.Shim, node string, p *plan.NodePlan) corev1.PodSpec {
	volumes, mounts := jobVolumes(p, o.HostRoot, pullSecretName(shim))
	volumes, mounts = trustedRootVolume(shim, volumes, mounts)
	return corev1.PodSpec{
		NodeName:      node, // pinned: no scheduling
		RestartPolicy: corev1.RestartPolicyNever,
		// The installer reaches systemd over the system D-Bus socket,
		// which answers any root process; systemd's private socket
		// answers only its own PID namespace, hence hostPID only on
		// request (nodes without a system bus).
		HostPID: o.HostPID,
		// A node agent: it must work before (or without) the pod
		// network, and fetches what the node itself could.
		HostNetwork: true,
		DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
		// Serve tainted nodes too: the shim is for every matching node.
		Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		PriorityClassName: "system-node-critical",
		// The token lets the installer create its canary pod, and
		// nothing else (see Options.InstallerServiceAccount).
		ServiceAccountName:            o.InstallerServiceAccount,
		AutomountServiceAccountToken:  ptr.To(p.Canary != nil),
		TerminationGracePeriodSeconds: ptr.To(gracePeriodSeconds(p.Restart)),
		Volumes:                       volumes,
		Containers: []corev1.Container{{
			Name:            installerContainer,
			Image:           o.InstallerImage,
			ImagePullPolicy: corev1.PullPolicy(o.ImagePullPolicy),
			Args:            []string{string(p.Operation), "--plan", planFile, "--host-root", o.HostRoot, "--log-format", "json", "--result", resultPath},
			VolumeMounts:    mounts,
			Env:             o.InstallerEnv,
			// It edits host files, connects to containerd's and
			// systemd's sockets and sees the node's mounts: the only
			// privileged container (see the README's Security).
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			// The installer writes its NodeResult there, whatever
			// the outcome; the operator reads it back.
			TerminationMessagePath:   resultPath,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
	}
}

// jobVolumes are the installer's view of the node (the directories of
// hostDirs, under hostRoot), its plan, and the registry credentials the
// plan names.
func jobVolumes(p *plan.NodePlan, hostRoot, pullSecret string) ([]corev1.Volume, []corev1.VolumeMount) {
	volumes, mounts := hostVolumes(hostRoot)
	volumes = append(volumes, corev1.Volume{Name: "plan", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
		Path: path.Base(planFile), FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + PlanAnnotation + "']"},
	}}}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "plan", MountPath: planDir, ReadOnly: true})
	if p.Artifact != nil && p.Artifact.PullSecretPath != "" && pullSecret != "" {
		volumes = append(volumes, corev1.Volume{Name: "pull-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: pullSecret, Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: path.Base(pullSecretPath)}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pull-secret", MountPath: pullSecretDir, ReadOnly: true})
	}
	return volumes, mounts
}

// trustedRootVolume mounts the trusted root of keyless verification
// where the plan says it is.
func trustedRootVolume(shim *v1alpha1.Shim, volumes []corev1.Volume, mounts []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount) {
	v := shim.Spec.Verification
	if v == nil || v.Keyless == nil {
		return volumes, mounts
	}
	ref := v.Keyless.TrustedRootRef
	volumes = append(volumes, corev1.Volume{Name: "trusted-root", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
		Items:                []corev1.KeyToPath{{Key: trustedRootKey(ref), Path: path.Base(trustedRootPath)}},
	}}})
	return volumes, append(mounts, corev1.VolumeMount{Name: "trusted-root", MountPath: trustedRootDir, ReadOnly: true})
}

// hostDir is a directory of the node that the installer sees at the same
// path under its host root.
type hostDir struct {
	path     string
	readOnly bool
	// create lets the kubelet create the directory when the node lacks
	// it; only for a directory no preset detection looks at.
	create bool
}

// hostDirs are the node directories the installer reads and writes,
// instead of the node's whole /. Each one but /usr/local/bin must exist
// (hostPath type Directory): the kubelet never creates a directory that
// could change what containerdconfig.Detect finds, and the parents are
// mounted whole because detection looks for directories that only some
// nodes have (/var/lib/rancher/k3s, /var/snap/microk8s, /etc/k0s).
// Parents come before the directories mounted inside them.
func hostDirs() []hostDir {
	return []hostDir{
		// containerd's config, its imports and drop-ins (/etc/containerd,
		// k0s's /etc/k0s), the sandboxers' units (/etc/systemd/system).
		{path: "/etc"},
		// The installer's state and download cache (/var/lib/shimkit),
		// k3s's and RKE2's containerd (/var/lib/rancher), MicroK8s's
		// (/var/snap/microk8s).
		{path: "/var"},
		// Sockets: containerd's CRI (/run/containerd, /run/k3s, /run/k0s),
		// the system D-Bus and systemd's, the sandboxers' (/run/shimkit).
		{path: "/run"},
		// The bundles, /opt/shimkit: its parent, so that the installer can
		// remove /opt/shimkit with the last Shim.
		{path: "/opt"},
		// containerd's PATH, read only: no link may shadow a binary there.
		{path: "/usr", readOnly: true},
		{path: "/bin", readOnly: true},
		{path: "/sbin", readOnly: true},
		// The one writable directory of that PATH: the links containerd
		// 1.6 needs for pod sandboxes.
		{path: "/usr/local/bin", create: true},
	}
}

// hostVolumes are the hostPath volumes of hostDirs and their mounts under
// hostRoot. HostToContainer propagation lets the installer see what the
// node mounts later (a containerd restart's new mounts under /run).
func hostVolumes(hostRoot string) ([]corev1.Volume, []corev1.VolumeMount) {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, d := range hostDirs() {
		name := "host" + strings.ReplaceAll(d.path, "/", "-")
		typ := corev1.HostPathDirectory
		if d.create {
			typ = corev1.HostPathDirectoryOrCreate
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: d.path, Type: ptr.To(typ)}}})
		mounts = append(mounts, corev1.VolumeMount{
			Name: name, MountPath: path.Join(hostRoot, d.path), ReadOnly: d.readOnly,
			MountPropagation: ptr.To(corev1.MountPropagationHostToContainer),
		})
	}
	return volumes, mounts
}

// gracePeriodSeconds is the installer pod's terminationGracePeriodSeconds:
// SIGTERM (a drain, an eviction, the Job's deadline) may come while
// containerd restarts, so the pod gets the rest of that restart's health
// wait, then the whole rollback the installer starts on the signal (undo,
// one more restart and its health wait) and its margin to exit; never a
// SIGKILL half-way through a rollback.
func gracePeriodSeconds(r plan.Restart) int64 {
	d := r.HealthTimeout() + r.GracePeriod()
	return int64((d + time.Second - 1) / time.Second)
}

// pullSecretName is the Secret with the registry's credentials, if any.
func pullSecretName(shim *v1alpha1.Shim) string {
	if oci := shim.Spec.FetchStrategy.OCI; oci != nil && oci.PullSecretRef != nil {
		return oci.PullSecretRef.Name
	}
	return ""
}
