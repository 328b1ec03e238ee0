package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// failure explains a failed Job.
func (v *jobView) failure() (reason, message string) {
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

// buildJob returns the Job that runs the installer on one node.
func (r *Reconciler) buildJob(shim *v1alpha1.Shim, node *corev1.Node, op, hash string) *batchv1.Job {
	o := r.opts
	lbls := map[string]string{
		labelManagedBy: managedBy, labelShim: shim.Name, labelNode: node.Name, labelOp: op, labelSpecHash: hash,
	}
	env := []corev1.EnvVar{
		{Name: "SHIMKIT_HOST_ROOT", Value: o.HostRoot},
		{Name: "SHIMKIT_SHIM_NAME", Value: shim.Spec.RuntimeClass.Handler},
		{Name: "SHIMKIT_HANDLER", Value: shim.Spec.RuntimeClass.Handler},
		{Name: "SHIMKIT_LOG_FORMAT", Value: "json"},
	}
	var volumes []corev1.Volume
	mounts := []corev1.VolumeMount{{Name: "host", MountPath: o.HostRoot, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)}}
	if op == opInstall {
		env = append(env, installEnv(shim, node)...)
		if oci := shim.Spec.FetchStrategy.OCI; oci != nil && oci.PullSecretRef != nil {
			volumes = append(volumes, corev1.Volume{Name: "pull-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: oci.PullSecretRef.Name, Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}},
			}}})
			mounts = append(mounts, corev1.VolumeMount{Name: "pull-secret", MountPath: "/etc/shimkit/pull-secret", ReadOnly: true})
			env = append(env, corev1.EnvVar{Name: "SHIMKIT_PULL_SECRET", Value: "/etc/shimkit/pull-secret/config.json"})
		}
	}
	volumes = append(volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: ptr.To(corev1.HostPathDirectory)}}})

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
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
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
						Name:            "installer",
						Image:           o.InstallerImage,
						ImagePullPolicy: corev1.PullPolicy(o.ImagePullPolicy),
						Args:            []string{op},
						Env:             env,
						VolumeMounts:    mounts,
						// It edits host files and talks to systemd: the only
						// privileged container.
						SecurityContext:          &corev1.SecurityContext{Privileged: ptr.To(true)},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
}

// installEnv passes the Shim's spec to the installer, with the artifact of
// the node's platform.
func installEnv(shim *v1alpha1.Shim, node *corev1.Node) []corev1.EnvVar {
	s := shim.Spec
	env := []corev1.EnvVar{
		{Name: "SHIMKIT_RUNTIME_TYPE", Value: runtimeType(shim)},
		{Name: "SHIMKIT_FETCH_TYPE", Value: string(s.FetchStrategy.Type)},
	}
	add := func(k, v string) {
		if v != "" {
			env = append(env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	add("SHIMKIT_RUNTIME_PATH", s.RuntimePath)
	add("SHIMKIT_POD_ANNOTATIONS", strings.Join(s.PodAnnotations, ","))
	if s.PrivilegedWithoutHostDevices {
		add("SHIMKIT_PRIVILEGED_WITHOUT_HOST_DEVICES", "true")
	}
	add("SHIMKIT_OPTIONS", string(rawOptions(shim)))
	switch {
	case s.FetchStrategy.AnonHTTP != nil:
		h := s.FetchStrategy.AnonHTTP
		loc, sum := h.Location, h.SHA256
		for _, p := range h.Platforms {
			if p.Platform == platformOf(node) {
				loc, sum = p.Location, p.SHA256
			}
		}
		add("SHIMKIT_LOCATION", loc)
		add("SHIMKIT_SHA256", sum)
	case s.FetchStrategy.OCI != nil:
		add("SHIMKIT_OCI_REFERENCE", s.FetchStrategy.OCI.Reference)
		if s.FetchStrategy.OCI.PlainHTTP {
			add("SHIMKIT_PLAIN_HTTP", strconv.FormatBool(true))
		}
	}
	return env
}
