package canarypod_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/canarypod"
)

func canary(timeout time.Duration) plan.Canary {
	return plan.Canary{Handler: "runsc", RuntimeClass: "shimkit-canary-gvisor", Namespace: "shimkit-system",
		Image: "shimkit-installer:v1", Args: []string{"canary"}, Timeout: plan.Duration(timeout)}
}

// TestRunCanary: the pod is pinned to the node with the plan's
// RuntimeClass, image and arguments, no token and the canary's deadline;
// it passes only when it Succeeded, says why otherwise, and is deleted in
// every case.
func TestRunCanary(t *testing.T) {
	exited := func(code int32, reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "canary",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: "panic: boom"}}}}}
	}
	for _, tc := range []struct {
		name    string
		status  corev1.PodStatus
		timeout time.Duration
		want    string // "" for success
	}{
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded}, 5 * time.Second, ""},
		{"container failed", exited(2, "Error"), 5 * time.Second, "container exited 2 (Error) panic: boom"},
		{"deadline", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}, 5 * time.Second, "DeadlineExceeded"},
		{"never starts", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "canary",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}, 300 * time.Millisecond, "did not succeed in time (container waiting: ContainerCreating)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := &canarypod.MemoryPods{Kubelet: func(p *corev1.Pod) { p.Status = tc.status }}
			r := &canarypod.Runner{Pods: pods, Node: "node-1", Poll: 10 * time.Millisecond}
			err := r.RunCanary(context.Background(), canary(tc.timeout))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("RunCanary: %v", err)
			case tc.want != "" && (!errors.Is(err, installer.ErrCanaryFailed) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("RunCanary: %v, want ErrCanaryFailed saying %q", err, tc.want)
			}
			if len(pods.Created) != 1 {
				t.Fatalf("%d pods created", len(pods.Created))
			}
			p := pods.Created[0]
			s := p.Spec
			if p.Namespace != "shimkit-system" || s.NodeName != "node-1" || *s.RuntimeClassName != "shimkit-canary-gvisor" || s.RestartPolicy != corev1.RestartPolicyNever ||
				*s.AutomountServiceAccountToken || *s.ActiveDeadlineSeconds != max(int64(tc.timeout.Seconds()), 1) ||
				s.Containers[0].Image != "shimkit-installer:v1" || strings.Join(s.Containers[0].Args, " ") != "canary" {
				t.Errorf("pod %s/%s spec %+v", p.Namespace, p.Name, s)
			}
			if pods.Len() != 0 {
				t.Errorf("%d pods left", pods.Len())
			}
		})
	}
}

// TestRunCanarySaysWhy: a canary that never runs fails with the newest
// Warning event about its pod first (what the kubelet saw the runtime
// say), before what the pod was waiting for; Normal events and older
// Warnings are left out, and so are the kubelet's DNS advisories (newer:
// it repeats them) unless there is nothing else.
func TestRunCanarySaysWhy(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 25, 6, 0, s, 0, time.UTC)) }
	sandbox := corev1.Event{Type: corev1.EventTypeWarning, Reason: "FailedCreatePodSandBox", Message: "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start shim: flaky: this node is not ready", LastTimestamp: at(9)}
	dns := corev1.Event{Type: corev1.EventTypeWarning, Reason: "MissingClusterDNS", Message: "kubelet does not have ClusterDNS IP configured", LastTimestamp: at(14)}
	const waiting = "did not succeed in time (container waiting: ContainerCreating)"
	for _, tc := range []struct {
		name   string
		events []corev1.Event
		want   string
	}{
		{"the newest warning", []corev1.Event{
			{Type: corev1.EventTypeNormal, Reason: "Scheduled", Message: "pinned", LastTimestamp: at(1)},
			sandbox,
			{Type: corev1.EventTypeWarning, Reason: "FailedMount", Message: "older", LastTimestamp: at(3)},
			{Type: corev1.EventTypeNormal, Reason: "SandboxChanged", Message: "newer but Normal", LastTimestamp: at(12)},
		}, "node-1: FailedCreatePodSandBox: Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start shim: flaky: this node is not ready; " + waiting},
		{"not a newer DNS advisory", []corev1.Event{dns, sandbox}, "node-1: FailedCreatePodSandBox: Failed to create pod sandbox"},
		{"not a newer DNS advisory, listed first", []corev1.Event{sandbox, dns}, "node-1: FailedCreatePodSandBox: Failed to create pod sandbox"},
		{"the advisory when there is nothing else", []corev1.Event{dns}, "node-1: MissingClusterDNS: kubelet does not have ClusterDNS IP configured; " + waiting},
		{"no warning", []corev1.Event{{Type: corev1.EventTypeNormal, Reason: "Scheduled", Message: "pinned", LastTimestamp: at(1)}}, "node-1: " + waiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := &canarypod.MemoryPods{
				Kubelet: func(p *corev1.Pod) {
					p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "canary",
						State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
				},
				Report: func(*corev1.Pod) []corev1.Event { return tc.events },
			}
			r := &canarypod.Runner{Pods: pods, Node: "node-1", Poll: 10 * time.Millisecond}
			err := r.RunCanary(context.Background(), canary(300*time.Millisecond))
			if !errors.Is(err, installer.ErrCanaryFailed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunCanary: %v\nwant it to say %q", err, tc.want)
			}
			for _, other := range []string{"older", "Normal"} {
				if strings.Contains(err.Error(), other) {
					t.Errorf("RunCanary quotes another event: %v", err)
				}
			}
		})
	}
}

func TestRunCanaryNeedsNode(t *testing.T) {
	r := canarypod.New(&canarypod.MemoryPods{}, "")
	if err := r.RunCanary(context.Background(), canary(time.Second)); !errors.Is(err, installer.ErrCanaryFailed) {
		t.Errorf("got %v", err)
	}
}
