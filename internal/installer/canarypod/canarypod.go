package canarypod

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
)

// Labels of a canary pod.
const (
	LabelCanary    = "shimkit.dev/canary"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "shimkit"
	containerName  = "canary"
)

// Runner runs canaries as Pods on Node.
type Runner struct {
	// Pods creates, reads and deletes the pods: RESTPods, or MemoryPods
	// in tests.
	Pods Pods
	// Node is the node the pods are pinned to (the installer's).
	Node string
	// Poll is how often the pod is read; default 500ms.
	Poll time.Duration
	// Events lists the events about a failed canary pod, whose newest
	// Warning says why it failed; nil: Pods' own, when they list events.
	Events Events
}

var _ installer.CanaryRunner = (*Runner)(nil)

// New returns a Runner for the node.
func New(pods Pods, node string) *Runner { return &Runner{Pods: pods, Node: node} }

// RunCanary creates the canary pod, waits until it ends or the canary's
// timeout passes, and deletes it.
func (r *Runner) RunCanary(ctx context.Context, c plan.Canary) error {
	if r.Node == "" {
		return fmt.Errorf("%w: no node name to pin the canary pod to", installer.ErrCanaryFailed)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.Timeout))
	defer cancel()
	pod, err := r.Pods.Create(ctx, r.pod(c))
	if err != nil {
		return fmt.Errorf("%w: creating the canary pod in %s: %w", installer.ErrCanaryFailed, c.Namespace, err)
	}
	defer r.remove(ctx, pod)
	if err := r.wait(ctx, pod); err != nil {
		// The kubelet's newest Warning about the pod says why first: a
		// failure's message is kept short on the node.
		cause := r.lastWarning(ctx, pod)
		if cause != "" {
			cause += "; "
		}
		return fmt.Errorf("%w: pod %s/%s on node %s: %s%w (RuntimeClass %s, handler %s, image %s)",
			installer.ErrCanaryFailed, pod.Namespace, pod.Name, r.Node, cause, err, c.RuntimeClass, c.Handler, c.Image)
	}
	return nil
}

func (r *Runner) pod(c plan.Canary) *corev1.Pod {
	deadline := int64(time.Duration(c.Timeout).Seconds())
	if deadline < 1 {
		deadline = 1
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "shimkit-canary-" + c.Handler + "-",
			Namespace:    c.Namespace,
			Labels:       map[string]string{LabelManagedBy: managedBy, LabelCanary: c.Handler},
		},
		Spec: corev1.PodSpec{
			NodeName:                      r.Node,
			RuntimeClassName:              ptr.To(c.RuntimeClass),
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: containerName, Image: c.Image, Command: c.Command, Args: c.Args,
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// wait polls the pod until it Succeeded (nil) or Failed, or ctx is done.
func (r *Runner) wait(ctx context.Context, pod *corev1.Pod) error {
	poll := r.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	cur := pod
	for {
		got, err := r.Pods.Get(ctx, pod.Namespace, pod.Name)
		if err == nil {
			cur = got
		}
		switch {
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("reading the pod: %w", err)
		case err == nil && cur.Status.Phase == corev1.PodSucceeded:
			return nil
		case err == nil && cur.Status.Phase == corev1.PodFailed:
			return fmt.Errorf("failed: %s", why(cur))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("did not succeed in time (%s): %w", why(cur), ctx.Err())
		case <-time.After(poll):
		}
	}
}

// why says what became of the pod: its container's end, or what it waits
// for, or the pod's own reason.
func why(pod *corev1.Pod) string {
	var parts []string
	if pod.Status.Reason != "" || pod.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(pod.Status.Reason+" "+pod.Status.Message))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		switch s := cs.State; {
		case s.Terminated != nil:
			parts = append(parts, fmt.Sprintf("container exited %d (%s) %s", s.Terminated.ExitCode, s.Terminated.Reason, strings.TrimSpace(s.Terminated.Message)))
		case s.Waiting != nil:
			parts = append(parts, strings.TrimSpace("container waiting: "+s.Waiting.Reason+" "+s.Waiting.Message))
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, string(c.Type)+": "+c.Message)
		}
	}
	if len(parts) == 0 {
		return "phase " + string(orPending(pod.Status.Phase))
	}
	return strings.Join(parts, "; ")
}

func orPending(p corev1.PodPhase) corev1.PodPhase {
	if p == "" {
		return corev1.PodPending
	}
	return p
}

// remove deletes the pod with a deadline of its own (the canary's may be
// what ran out).
func (r *Runner) remove(ctx context.Context, pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = r.Pods.Delete(ctx, pod.Namespace, pod.Name)
}
