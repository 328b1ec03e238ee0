package nodejob

import (
	"fmt"
	"maps"
	"path"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
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
	// Container is the name of the Job's one container, the installer.
	Container = "installer"
)

// Where the installer finds what a plan names beside itself: the registry
// credentials (plan.Artifact.PullSecretPath) and the trusted root of
// keyless verification (plan.Keyless.TrustedRootPath). Build mounts them
// there from Spec.PullSecret and Spec.TrustedRoot.
const (
	pullSecretDir   = "/etc/shimkit/pull-secret"
	PullSecretPath  = pullSecretDir + "/config.json"
	trustedRootDir  = "/etc/shimkit/trusted-root"
	TrustedRootFile = "trusted_root.json"
	TrustedRootPath = trustedRootDir + "/" + TrustedRootFile
)

// DefaultHostRoot is where the node's directories are mounted in the
// installer pod unless Spec.HostRoot says otherwise.
const DefaultHostRoot = "/host"

// Spec is what a plan's Job needs beside the plan: where and as what it
// runs, and what it carries for its owner.
type Spec struct {
	// Name and Namespace of the Job (required).
	Name, Namespace string
	// Image runs shimkit-installer (required); ImagePullPolicy defaults
	// to the cluster's.
	Image           string
	ImagePullPolicy corev1.PullPolicy
	// ServiceAccount of the pod; its token is mounted only for a plan
	// with a canary (the canary pod is created by the installer).
	ServiceAccount string
	// HostRoot is where the node's directories are mounted in the pod
	// (default DefaultHostRoot); HostPID runs the pod in the node's PID
	// namespace (nodes without a system D-Bus).
	HostRoot string
	HostPID  bool
	// BundleRoot and LinkDir are the node directories of the Shims'
	// bundles and of the links on containerd's PATH ("-": none), for
	// nodes whose /opt or /usr/local/bin is read-only (COS:
	// /home/kubernetes/bin); empty: the installer's defaults
	// (/opt/shimkit, /usr/local/bin). Every install and uninstall of a
	// node must use the same ones.
	BundleRoot, LinkDir string
	Env                 []corev1.EnvVar
	// BackoffLimit bounds the pods retried after a failure the installer
	// did not call final; Deadline bounds the Job (0: none); TTL keeps a
	// finished Job that long (0: until deleted).
	BackoffLimit  int32
	Deadline, TTL time.Duration
	// PullSecret names the Secret (kubernetes.io/dockerconfigjson) with
	// the registry's credentials, mounted when the plan's artifact reads
	// them (plan.Artifact.PullSecretPath), and the pod's imagePullSecrets
	// when it is an image (plan.SourceImage).
	PullSecret string
	// ImageWay is how an image artifact reaches the installer on the
	// node: ImageVolume (the default) or ImageCopy.
	ImageWay string
	// TrustedRoot is the ConfigMap key holding the trusted root of keyless
	// verification, mounted at TrustedRootPath when the plan reads it
	// (plan.Keyless.TrustedRootPath).
	TrustedRoot *corev1.ConfigMapKeySelector
	// Labels go on the Job and its pods, Annotations on the Job; Owners
	// are its owner references.
	Labels, Annotations map[string]string
	Owners              []metav1.OwnerReference
}

// Build returns the Job that carries out the plan on its node (p.Node).
func Build(p *plan.NodePlan, s Spec) (*batchv1.Job, error) {
	if s.Name == "" || s.Namespace == "" || s.Image == "" {
		return nil, fmt.Errorf("installer Job of the plan for node %s: nodejob.Spec.Name, Namespace and Image are required", p.Node)
	}
	doc, err := plan.Encode(p)
	if err != nil {
		return nil, fmt.Errorf("installer Job %s for node %s: %w", s.Name, p.Node, err)
	}
	if s.HostRoot == "" {
		s.HostRoot = DefaultHostRoot
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: maps.Clone(s.Labels), Annotations: maps.Clone(s.Annotations), OwnerReferences: s.Owners},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(s.BackoffLimit),
			TTLSecondsAfterFinished: seconds32(s.TTL),
			// The installer rolls back by itself; a rolled-back or failed
			// rollback, a bad plan and a refusal that retrying cannot
			// change (a Conflict, say) are final: the Job ends at once.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: plan.FinalExitCodes()},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(s.Labels), Annotations: map[string]string{PlanAnnotation: string(doc)}},
				Spec:       Pod(p, s),
			},
		},
	}
	if s.Deadline > 0 {
		job.Spec.ActiveDeadlineSeconds = ptr.To(int64(s.Deadline.Seconds()))
	}
	return job, nil
}

func seconds32(d time.Duration) *int32 {
	if d <= 0 {
		return nil
	}
	return ptr.To(int32(d.Seconds()))
}

// Pod is the spec of the installer's pod for the plan on its node.
func Pod(p *plan.NodePlan, s Spec) corev1.PodSpec {
	if s.HostRoot == "" {
		s.HostRoot = DefaultHostRoot
	}
	volumes, mounts := volumes(p, s)
	pod := corev1.PodSpec{
		NodeName:      p.Node, // pinned: no scheduling
		RestartPolicy: corev1.RestartPolicyNever,
		// The installer reaches systemd over the system D-Bus socket,
		// which answers any root process; systemd's private socket
		// answers only its own PID namespace, hence hostPID only on
		// request (nodes without a system bus).
		HostPID: s.HostPID,
		// A node agent: it must work before (or without) the pod
		// network, and fetches what the node itself could.
		HostNetwork: true,
		DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
		// Serve tainted nodes too: the plan is for this node.
		Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		PriorityClassName: "system-node-critical",
		// The token lets the installer create its canary pod, and
		// nothing else.
		ServiceAccountName:            s.ServiceAccount,
		AutomountServiceAccountToken:  ptr.To(p.Canary != nil),
		TerminationGracePeriodSeconds: ptr.To(GracePeriodSeconds(p.Restart)),
		Volumes:                       volumes,
		Containers: []corev1.Container{{
			Name:            Container,
			Image:           s.Image,
			ImagePullPolicy: s.ImagePullPolicy,
			Args:            args(p, s),
			VolumeMounts:    mounts,
			Env:             s.Env,
			// It edits host files, connects to containerd's and
			// systemd's sockets and sees the node's mounts: the only
			// privileged container (see the README's Security).
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			// The installer writes its NodeResult there, whatever the
			// outcome; ResultOf reads it back.
			TerminationMessagePath:   resultPath,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
	}
	WithImages(&pod, []*plan.NodePlan{p}, s)
	return pod
}

// args are the installer's arguments: the operation, its plan and result,
// and the node's directories where they are not the defaults.
func args(p *plan.NodePlan, s Spec) []string {
	a := []string{string(p.Operation), "--plan", planFile, "--host-root", s.HostRoot, "--log-format", "json", "--result", resultPath}
	if s.BundleRoot != "" {
		a = append(a, "--bundle-root", s.BundleRoot)
	}
	if s.LinkDir != "" {
		a = append(a, "--link-dir", s.LinkDir)
	}
	return a
}

// volumes are the installer's view of the node (HostDirs, under the host
// root), its plan, and the credentials and trusted root the plan names.
func volumes(p *plan.NodePlan, s Spec) ([]corev1.Volume, []corev1.VolumeMount) {
	volumes, mounts := hostVolumes(s.HostRoot, hostDirsFor(s))
	volumes = append(volumes, corev1.Volume{Name: "plan", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
		Path: path.Base(planFile), FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + PlanAnnotation + "']"},
	}}}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "plan", MountPath: planDir, ReadOnly: true})
	if p.Artifact != nil && p.Artifact.PullSecretPath != "" && s.PullSecret != "" {
		volumes = append(volumes, corev1.Volume{Name: "pull-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s.PullSecret, Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: path.Base(PullSecretPath)}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "pull-secret", MountPath: pullSecretDir, ReadOnly: true})
	}
	if ref := s.TrustedRoot; ref != nil && readsTrustedRoot(p) {
		volumes = append(volumes, corev1.Volume{Name: "trusted-root", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: ref.LocalObjectReference,
			Items:                []corev1.KeyToPath{{Key: ref.Key, Path: TrustedRootFile}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "trusted-root", MountPath: trustedRootDir, ReadOnly: true})
	}
	return volumes, mounts
}

// readsTrustedRoot: the plan verifies its artifact keylessly against a
// trusted root file.
func readsTrustedRoot(p *plan.NodePlan) bool {
	a := p.Artifact
	return a != nil && a.Verification != nil && a.Verification.Keyless != nil && a.Verification.Keyless.TrustedRootPath != ""
}

// GracePeriodSeconds is the installer pod's terminationGracePeriodSeconds:
// SIGTERM (a drain, an eviction, the Job's deadline) may come while
// containerd restarts, so the pod gets the rest of that restart's health
// wait, then the whole rollback the installer starts on the signal (undo,
// one more restart and its health wait) and its margin to exit; never a
// SIGKILL half-way through a rollback.
func GracePeriodSeconds(r plan.Restart) int64 {
	d := r.HealthTimeout() + r.GracePeriod()
	return int64((d + time.Second - 1) / time.Second)
}
