package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
)

// An envtest API server runs no Job controller and no kubelet: these
// helpers stand in for them for an installer Job, running the real
// installer binary for its pod (RealInstaller) and writing what the Job
// controller and the kubelet would (FinishJob).

// PodRun is how an installer pod ended.
type PodRun struct {
	ExitCode int32
	Message  string // the container's termination message
	Log      []byte // what the container wrote (its log, as the kubelet serves it)
}

// ResultRun is a pod that wrote r as its termination message.
func ResultRun(t testing.TB, code int32, r *plan.NodeResult) PodRun {
	t.Helper()
	data, err := plan.EncodeResult(r, plan.MaxTerminationMessage)
	if err != nil {
		t.Fatal(err)
	}
	return PodRun{ExitCode: code, Message: string(data)}
}

// CreateJobPod creates the Job's pod as the Job controller would (its
// template, the controller-uid label, owned by the Job) and writes the
// status the kubelet would: terminated with run's exit code and message.
func CreateJobPod(ctx context.Context, c client.Client, j *batchv1.Job, run PodRun) error {
	tmpl := j.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	// A Job recreated under the same name gets a pod of its own name, as
	// the Job controller's random suffix gives it.
	pod.Name, pod.Namespace = j.Name+"-"+string(j.UID)[:5], j.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["batch.kubernetes.io/controller-uid"] = string(j.UID)
	pod.Labels["batch.kubernetes.io/job-name"] = j.Name
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}
	if err := c.Create(ctx, pod); err != nil {
		return fmt.Errorf("create pod of Job %s: %w", j.Name, err)
	}
	phase, reason := corev1.PodSucceeded, "Completed"
	if run.ExitCode != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: run.ExitCode, Reason: reason, Message: run.Message, StartedAt: now, FinishedAt: now,
		}},
	}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("status of pod %s: %w", pod.Name, err)
	}
	return nil
}

// EndJob sets in j the status the Job controller writes once its pod
// ended with exit code (0: complete): a final exit code
// (plan.FinalExitCodes) fails it by its pod failure policy, another
// after its backoff limit.
func EndJob(j *batchv1.Job, code int32) {
	now := metav1.Now()
	start := j.CreationTimestamp
	j.Status.StartTime = &start
	if code == 0 {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		return
	}
	reason, msg := "BackoffLimitExceeded", "Job has reached the specified backoff limit"
	if slices.Contains(plan.FinalExitCodes(), code) {
		reason, msg = "PodFailurePolicy", fmt.Sprintf("Container installer for pod %s/%s failed with exit code %d matching FailJob rule at index 0", j.Namespace, j.Name, code)
	}
	j.Status.Failed = 1
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now},
	}
}

var installerBin = struct {
	once sync.Once
	path string
	err  error
}{}

// InstallerBinary builds cmd/shimkit-installer once per test binary;
// RemoveInstallerBinary (from TestMain) removes it.
func InstallerBinary(t testing.TB) string {
	t.Helper()
	installerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "shimkit-installer-test-")
		if err != nil {
			installerBin.err = err
			return
		}
		installerBin.path = filepath.Join(dir, "shimkit-installer")
		GoBuild(t, "./cmd/shimkit-installer", installerBin.path)
	})
	if installerBin.err != nil {
		t.Fatal(installerBin.err)
	}
	return installerBin.path
}

// RemoveInstallerBinary removes what InstallerBinary built.
func RemoveInstallerBinary() {
	if installerBin.path != "" {
		_ = os.RemoveAll(filepath.Dir(installerBin.path))
	}
}

var annotationRef = regexp.MustCompile(`^metadata\.annotations\['([^']+)'\]$`)

// RealInstaller runs the real installer for a Job's pod, as the kubelet
// would run its container: the pod's args, the files its volumes mount
// (the plan, from the pod's annotation through the downward API), the
// node's / where rootOf says, extra arguments (such as --offline, for
// nodes without containerd), and the termination message file.
func RealInstaller(t testing.TB, rootOf func(*batchv1.Job) string, extra ...string) func(context.Context, *batchv1.Job) PodRun {
	bin := InstallerBinary(t)
	return func(ctx context.Context, j *batchv1.Job) PodRun {
		pod := j.Spec.Template
		c := pod.Spec.Containers[0]
		dir, err := os.MkdirTemp("", "pod-")
		if err != nil {
			return PodRun{ExitCode: 128, Message: err.Error()}
		}
		defer os.RemoveAll(dir)
		if err := mountVolumes(pod, c, dir); err != nil {
			return PodRun{ExitCode: 128, Message: err.Error()}
		}
		message := filepath.Join(dir, "termination-log")
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			switch {
			case a == c.TerminationMessagePath:
				args[i] = message
			case i > 0 && c.Args[i-1] == "--host-root":
				args[i] = rootOf(j)
			case strings.HasPrefix(a, "/"):
				args[i] = filepath.Join(dir, a) // a mounted file
			default:
				args[i] = a
			}
		}
		cmd := exec.CommandContext(ctx, bin, append(args, extra...)...)
		out, err := cmd.CombinedOutput()
		code := int32(0)
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = int32(exit.ExitCode())
		} else if err != nil {
			return PodRun{ExitCode: 128, Message: err.Error()}
		}
		t.Logf("installer %v: exit %d\n%s", c.Args, code, out)
		data, _ := os.ReadFile(message)
		return PodRun{ExitCode: code, Message: string(data), Log: out}
	}
}

// mountVolumes writes the container's downward API files under dir, at
// their mount paths.
func mountVolumes(pod corev1.PodTemplateSpec, c corev1.Container, dir string) error {
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.DownwardAPI == nil {
				continue
			}
			for _, item := range v.DownwardAPI.Items {
				ref := annotationRef.FindStringSubmatch(item.FieldRef.FieldPath)
				if ref == nil {
					return fmt.Errorf("volume %s: field %s is not an annotation", v.Name, item.FieldRef.FieldPath)
				}
				f := filepath.Join(dir, m.MountPath, item.Path)
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(f, []byte(pod.Annotations[ref[1]]), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
