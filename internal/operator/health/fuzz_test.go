package health_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/operator/health"
)

// FuzzFailures builds pods and Events from random bytes (each pod: its
// class, node, name, creation, and a container state; each Event: its
// pod, reason and time) and checks: no panic; at most one Failure per pod,
// of a pod of the classes on the nodes, seen at or after since, with a
// known reason and a bounded message; sorted; and Check trips exactly
// when a limit is reached, naming at most MaxNamed pods.
func FuzzFailures(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2}, []byte{0, 0, 1}, uint8(1), uint8(2))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, []byte{}, uint8(2), uint8(0))
	f.Add([]byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa}, []byte{0, 1, 2, 3, 4, 5}, uint8(0), uint8(3))
	f.Add([]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, []byte{9, 9, 9}, uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, podBytes, eventBytes []byte, perNode, total uint8) {
		classes := map[string]bool{"c0": true, "c1": true}
		nodes := map[string]bool{"n0": true, "n1": true}
		var pods []*corev1.Pod
		for i := 0; i+4 < len(podBytes) && len(pods) < 64; i += 5 {
			pods = append(pods, randomPod(podBytes[i:i+5]))
		}
		var events []*corev1.Event
		for i := 0; i+2 < len(eventBytes) && len(events) < 64; i += 3 {
			b := eventBytes[i : i+3]
			e := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i)},
				InvolvedObject: corev1.ObjectReference{UID: types.UID(fmt.Sprintf("uid-p%d", b[0]%8))},
				Reason:         []string{health.ReasonSandboxFailed, "BackOff", health.ReasonSandboxFailed}[b[1]%3],
				Message:        strings.Repeat("x", int(b[2])*3),
			}
			at := since.Add(time.Duration(int(b[2]%8)-4) * time.Minute)
			switch b[1] % 4 {
			case 0:
				e.LastTimestamp = metav1.NewTime(at)
			case 1:
				e.EventTime = metav1.NewMicroTime(at)
			case 2:
				e.Series = &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(at)}
			}
			events = append(events, e)
		}

		fs := health.Failures(pods, events, classes, nodes, since)
		seen := map[string]bool{}
		known := []string{health.ReasonSandboxFailed, health.ReasonCreateContainerError, health.ReasonRunContainerError, health.ReasonStartError, health.ReasonContainerCannotRun}
		for i, f := range fs {
			key := f.Namespace + "/" + f.Pod
			if seen[key] {
				t.Errorf("two failures of %s", key)
			}
			seen[key] = true
			if !classes[f.RuntimeClass] || !nodes[f.Node] || f.At.Before(since) || !slices.Contains(known, f.Reason) || len(f.Message) > health.MaxMessage {
				t.Errorf("failure %+v", f)
			}
			if i > 0 && (fs[i-1].Node > f.Node || fs[i-1].Node == f.Node && fs[i-1].Pod >= f.Pod) {
				t.Errorf("not sorted: %s/%s before %s/%s", fs[i-1].Node, fs[i-1].Pod, f.Node, f.Pod)
			}
		}

		th := health.Thresholds{PerNode: int(perNode % 4), Total: int(total % 6)}
		v := th.Check(fs)
		counts := map[string]int{}
		for _, f := range fs {
			counts[f.Node]++
		}
		reached := th.Total > 0 && len(fs) >= th.Total
		for _, c := range counts {
			reached = reached || th.PerNode > 0 && c >= th.PerNode
		}
		if v.Tripped != reached {
			t.Errorf("tripped %v with %v failing (thresholds %+v)", v.Tripped, counts, th)
		}
		for _, n := range v.Nodes {
			if counts[n] < th.PerNode || th.PerNode <= 0 {
				t.Errorf("node %s listed with %d failing (thresholds %+v)", n, counts[n], th)
			}
		}
		if named := strings.Count(v.Message, "default/"); named > health.MaxNamed || named != min(len(fs), health.MaxNamed) {
			t.Errorf("%d pods named of %d: %s", named, len(fs), v.Message)
		}
	})
}

// randomPod: b[0] its class (or none), b[1] its node (or none), b[2] its
// name and creation, b[3] and b[4] its container's state.
func randomPod(b []byte) *corev1.Pod {
	name := fmt.Sprintf("p%d", b[2]%8)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(since.Add(time.Duration(int(b[2]>>3%8)-4) * time.Minute))}}
	if b[0]%4 < 3 {
		p.Spec.RuntimeClassName = new(fmt.Sprintf("c%d", b[0]%4))
	}
	if b[1]%4 < 3 {
		p.Spec.NodeName = fmt.Sprintf("n%d", b[1]%4)
	}
	reasons := []string{"CreateContainerError", "RunContainerError", "StartError", "ContainerCannotRun", "Error", "CreateContainerConfigError", "CrashLoopBackOff", "ImagePullBackOff"}
	reason := reasons[b[3]%8]
	at := metav1.NewTime(since.Add(time.Duration(int(b[4]%8)-4) * time.Minute))
	cs := corev1.ContainerStatus{Name: "app"}
	switch b[3] >> 3 % 4 {
	case 0:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: strings.Repeat("m", int(b[4]))}
	case 1:
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: 128, FinishedAt: at}
	case 2:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: 1, FinishedAt: at}
	case 3:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: at}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, FinishedAt: at}
	}
	if b[4]&0x80 != 0 {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs}
	} else {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	}
	if b[4]&0x40 != 0 {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, LastTransitionTime: at}}
	}
	return p
}
