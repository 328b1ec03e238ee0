package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Operations a Job runs.
const (
	opInstall   = "install"
	opUninstall = "uninstall"
)

// Labels on the Jobs.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "shimkit"
	labelShim      = "shim.containerd.x-k8s.io/shim"
	labelNode      = "shim.containerd.x-k8s.io/node"
	labelOp        = "shim.containerd.x-k8s.io/op"
	labelSpecHash  = "shim.containerd.x-k8s.io/spec-hash"
)

// jobName is unique per shim, node, operation and spec hash, and at most
// 63 characters (a Job's name becomes a pod label value): readable parts,
// shortened, then a hash of the whole.
func jobName(shim, node, op, hash string) string {
	sum := sha256.Sum256([]byte(shim + "\x00" + node + "\x00" + op + "\x00" + hash))
	suffix := hex.EncodeToString(sum[:])[:10]
	short := func(s string, n int) string {
		if len(s) > n {
			s = s[:n]
		}
		return strings.Trim(strings.ReplaceAll(s, ".", "-"), "-")
	}
	verb := "i"
	if op == opUninstall {
		verb = "u"
	}
	return "shim-" + verb + "-" + short(shim, 20) + "-" + short(node, 20) + "-" + suffix
}

// jobView is what the reconciler reads from a Job.
type jobView struct {
	job      *batchv1.Job
	op       string
	specHash string
	// result is the installer's NodeResult, once read from a finished
	// Job's pod (resultRead: read, even when none was found).
	result     *plan.NodeResult
	resultRead bool
}

func viewJob(j *batchv1.Job) *jobView {
	return &jobView{job: j, op: j.Labels[labelOp], specHash: j.Labels[labelSpecHash]}
}

func (v *jobView) condition(t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range v.job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &v.job.Status.Conditions[i]
		}
	}
	return nil
}

func (v *jobView) succeeded() bool { return v.condition(batchv1.JobComplete) != nil }
func (v *jobView) failed() bool    { return v.condition(batchv1.JobFailed) != nil }
func (v *jobView) running() bool {
	return !v.succeeded() && !v.failed() && v.job.DeletionTimestamp == nil
}

// failure explains a failed Job: the installer's reason and message, or
// the Job's condition when the installer left no result.
func (v *jobView) failure() (reason, message string) {
	if r := v.result; r != nil && r.Outcome != plan.Succeeded {
		if r.Reason == "" {
			return string(r.Outcome), r.Message
		}
		return string(r.Reason), r.Message
	}
	c := v.condition(batchv1.JobFailed)
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// newer reports whether a is a later Job than b for the same node.
func newer(a, b *batchv1.Job) bool {
	return b == nil || a.CreationTimestamp.After(b.CreationTimestamp.Time) ||
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && a.Name > b.Name
}

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
		labelManagedBy: managedBy, labelShim: shim.Name, labelNode: node.Name, labelOp: op, labelSpecHash: hash,
	}
	volumes, mounts := jobVolumes(p, o.HostRoot, pullSecretName(shim))
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName(shim.Name, node.Name, op, hash), Namespace: o.Namespace, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim"))},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(o.JobBackoffLimit),
			ActiveDeadlineSeconds:   ptr.To(int64(o.JobDeadline.Seconds())),
			TTLSecondsAfterFinished: ptr.To(int32(o.JobTTL.Seconds())),
			// The installer rolls back by itself; a rolled-back (3) or
			// failed rollback (4) is final.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3, 4}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls, Annotations: map[string]string{PlanAnnotation: string(doc)}},
				Spec: corev1.PodSpec{
					NodeName:      node.Name, // pinned: no scheduling
					RestartPolicy: corev1.RestartPolicyNever,
					// systemd's private socket answers only processes of its PID
					// namespace; the host's PID namespace is the way in.
					HostPID: true,
					// A node agent: it must work before (or without) the pod
					// network, and fetches what the node itself could.
					HostNetwork: true,
					DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
					// Serve tainted nodes too: the shim is for every matching node.
					Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					PriorityClassName:             "system-node-critical",
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(60)),
					Volumes:                       volumes,
					Containers: []corev1.Container{{
						Name:            installerContainer,
						Image:           o.InstallerImage,
						ImagePullPolicy: corev1.PullPolicy(o.ImagePullPolicy),
						Args:            []string{op, "--plan", planFile, "--host-root", o.HostRoot, "--log-format", "json", "--result", resultPath},
						VolumeMounts:    mounts,
						// It edits host files and talks to systemd: the only
						// privileged container.
						SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
						// The installer writes its NodeResult there, whatever
						// the outcome; the operator reads it back.
						TerminationMessagePath:   resultPath,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
				},
			},
		},
	}, nil
}

// jobVolumes are the installer's view of the node (its / at hostRoot), its
// plan, and the registry credentials the plan names.
func jobVolumes(p *plan.NodePlan, hostRoot, pullSecret string) ([]corev1.Volume, []corev1.VolumeMount) {
	volumes := []corev1.Volume{
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: ptr.To(corev1.HostPathDirectory)}}},
		{Name: "plan", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
			Path: path.Base(planFile), FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + PlanAnnotation + "']"},
		}}}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "host", MountPath: hostRoot, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
		{Name: "plan", MountPath: planDir, ReadOnly: true},
	}
	if p.Artifact != nil && p.Artifact.PullSecretPath != "" && pullSecret != "" {
		volumes = append(volumes, corev1.Volume{Name: "pull-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: pullSecret, Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: path.Base(pullSecretPath)}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pull-secret", MountPath: pullSecretDir, ReadOnly: true})
	}
	return volumes, mounts
}

// pullSecretName is the Secret with the registry's credentials, if any.
func pullSecretName(shim *v1alpha1.Shim) string {
	if oci := shim.Spec.FetchStrategy.OCI; oci != nil && oci.PullSecretRef != nil {
		return oci.PullSecretRef.Name
	}
	return ""
}
