package canarypod

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Events lists what was reported about a pod: the core/v1 Events whose
// involved object is the pod. A canary that never runs is explained there
// (the kubelet's FailedCreatePodSandBox with the runtime's error,
// CreateContainerError, ErrImagePull), not in the pod's status.
type Events interface {
	PodEvents(ctx context.Context, pod *corev1.Pod) ([]corev1.Event, error)
}

var (
	_ Events = (*RESTPods)(nil)
	_ Events = (*MemoryPods)(nil)
)

// PodEvents lists the pod's events (by its UID) from the API server.
func (p *RESTPods) PodEvents(ctx context.Context, pod *corev1.Pod) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	err := p.c.Get().Namespace(pod.Namespace).Resource("events").
		Param("fieldSelector", "involvedObject.uid="+string(pod.UID)).Do(ctx).Into(list)
	if err != nil {
		return nil, fmt.Errorf("list the events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return list.Items, nil
}

// PodEvents returns what Report says of the pod (none without Report).
func (m *MemoryPods) PodEvents(_ context.Context, pod *corev1.Pod) ([]corev1.Event, error) {
	if m.Report == nil {
		return nil, nil
	}
	return m.Report(pod), nil
}

// maxCause bounds the event message quoted in a canary's failure: the
// node keeps a failure's first 512 bytes.
const maxCause = 300

// advisory are the kubelet's Warnings that do not keep a pod from
// running (its DNS settings fell back): it repeats them on every sync of
// the pod, so they are the newest; another Warning, older, says why the
// canary did not run.
var advisory = map[string]bool{"MissingClusterDNS": true, "DNSConfigForming": true}

// lastWarning is "Reason: message" of the newest Warning event about the
// pod, an advisory one only when there is no other, "" when there is none
// (or none could be read: the failure stands without it).
func (r *Runner) lastWarning(ctx context.Context, pod *corev1.Pod) string {
	ev := r.events()
	if ev == nil || pod.UID == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	list, err := ev.PodEvents(ctx, pod)
	if err != nil {
		return ""
	}
	last := newestWarning(list)
	if last == nil {
		return ""
	}
	msg := strings.Join(strings.Fields(last.Message), " ")
	if len(msg) > maxCause {
		msg = msg[:maxCause] + "…"
	}
	return last.Reason + ": " + msg
}

// newestWarning is the newest Warning of list, an advisory one only when
// there is no other (nil: none).
func newestWarning(list []corev1.Event) *corev1.Event {
	var last *corev1.Event
	for i := range list {
		e := &list[i]
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		if last == nil || advisory[last.Reason] && !advisory[e.Reason] ||
			advisory[last.Reason] == advisory[e.Reason] && !when(e).Before(when(last)) {
			last = e
		}
	}
	return last
}

// events is the Runner's Events: its own, else its Pods' when they list
// events too (RESTPods, MemoryPods).
func (r *Runner) events() Events {
	if r.Events != nil {
		return r.Events
	}
	ev, _ := r.Pods.(Events)
	return ev
}

// when is the last time the event was seen.
func when(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}
