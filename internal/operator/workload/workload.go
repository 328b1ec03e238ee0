package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/health"
)

// The health gate reads the workloads of every namespace: their pods and
// the kubelet's FailedCreatePodSandBox Events.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch
//
// A drain (rolloutStrategy.disruption Drain) reads the pods of the node
// and the PodDisruptionBudgets.
//
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch

// The field indexes of the manager's cache that Failures lists by
// (AddToCache's informers have them).
const (
	PodRuntimeClassField = "spec.runtimeClassName"
	PodNodeField         = "spec.nodeName"
	EventReasonField     = "reason"
)

// SyncWait is how long Failures waits for the pod and
// Event informers to fill, the first time (they start then): longer, the
// reconcile fails and is retried, while the informers go on filling.
const SyncWait = 15 * time.Second

// Failures returns the failures the runtime caused (health.Failures)
// among the pods of the RuntimeClasses classes on the nodes since since.
// It reads the manager's cache (built with AddToCache): the pods by their
// spec.runtimeClassName index, and the FailedCreatePodSandBox Events the
// cache holds (only those). The first call starts the cache's pod and
// Event informers, cluster-wide (nothing watches them before, so a
// cluster none of whose Shims has a gate caches no pods); it waits at most
// SyncWait for them to fill. Given a client reading the API
// server itself (no cache), it lists every pod instead (the API server
// selects no pods by RuntimeClass).
func Failures(ctx context.Context, r client.Reader, classes []string, nodes map[string]bool, since time.Time) ([]health.Failure, error) {
	if len(classes) == 0 || len(nodes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, SyncWait)
	defer cancel()
	classSet := map[string]bool{}
	for _, c := range classes {
		classSet[c] = true
	}
	pods, err := classPods(ctx, r, classSet)
	if err != nil {
		return nil, err
	}
	var events corev1.EventList
	if err := r.List(ctx, &events, client.MatchingFields{EventReasonField: health.ReasonSandboxFailed}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, workloadErr(health.ReasonSandboxFailed+" Events", err)
	}
	evs := make([]*corev1.Event, len(events.Items))
	for i := range events.Items {
		evs[i] = &events.Items[i]
	}
	return health.Failures(pods, evs, classSet, nodes, since), nil
}

// PodsOn returns, by node, the pods of the RuntimeClasses classes bound
// to a node that have not ended (phase neither Succeeded nor Failed;
// those being deleted included: they run until the kubelet stops them),
// as "<namespace>/<name>", sorted. It reads the manager's cache as
// Failures does (the first call starts the pod informer).
func PodsOn(ctx context.Context, r client.Reader, classes []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(classes) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, SyncWait)
	defer cancel()
	want := map[string]bool{}
	for _, c := range classes {
		want[c] = true
	}
	pods, err := classPods(ctx, r, want)
	if err != nil {
		return nil, err
	}
	return ByNode(pods, classes), nil
}

// ByNode sorts the pods of the RuntimeClasses classes that have not ended
// by node, as PodsOn returns them (pods not bound to a node left out).
func ByNode(pods []*corev1.Pod, classes []string) map[string][]string {
	out := map[string][]string{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Spec.RuntimeClassName == nil || !slices.Contains(classes, *p.Spec.RuntimeClassName) ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Namespace+"/"+p.Name)
	}
	for _, pods := range out {
		slices.Sort(pods)
	}
	return out
}

// PodsOfNode returns the pods bound to the node (the cache's drain view
// of them, TrimPod), by the spec.nodeName index.
func PodsOfNode(ctx context.Context, r client.Reader, node string) ([]*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, SyncWait)
	defer cancel()
	var list corev1.PodList
	err := r.List(ctx, &list, client.MatchingFields{PodNodeField: node}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, workloadErr("the pods of node "+node, err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Budgets returns the cluster's PodDisruptionBudgets (a drain says which
// one keeps a pod).
func Budgets(ctx context.Context, r client.Reader) ([]*policyv1.PodDisruptionBudget, error) {
	ctx, cancel := context.WithTimeout(ctx, SyncWait)
	defer cancel()
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list); err != nil {
		return nil, workloadErr("PodDisruptionBudgets", err)
	}
	out := make([]*policyv1.PodDisruptionBudget, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// classPods lists the pods of the classes by the cache's RuntimeClass
// index; a client reading the API server itself (which selects no pods by
// RuntimeClass) lists every pod instead, for the caller to filter.
func classPods(ctx context.Context, r client.Reader, classes map[string]bool) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for _, c := range slices.Sorted(maps.Keys(classes)) {
		var list corev1.PodList
		err := r.List(ctx, &list, client.MatchingFields{PodRuntimeClassField: c}, client.UnsafeDisableDeepCopy)
		if apierrors.IsBadRequest(err) { // the API server's "field label not supported"
			if err = r.List(ctx, &list); err != nil {
				return nil, workloadErr("pods", err)
			}
			pods = pods[:0]
			for i := range list.Items {
				pods = append(pods, &list.Items[i])
			}
			return pods, nil
		}
		if err != nil {
			return nil, workloadErr(fmt.Sprintf("pods of RuntimeClass %s", c), err)
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	return pods, nil
}

// workloadErr says what could not be read, and why it may be so.
func workloadErr(what string, err error) error {
	hint := ""
	switch {
	case apierrors.IsTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		hint = fmt.Sprintf(" (not cached within %s: the operator's role must let it list and watch pods and events in all namespaces)", SyncWait)
	case apierrors.IsForbidden(err):
		hint = " (the operator's role must let it list and watch pods and events in all namespaces)"
	}
	return fmt.Errorf("listing %s: %w%s", what, err, hint)
}

// AddToCache adds to a manager's cache options what Failures reads: the pods
// trimmed (TrimPod) and indexed by RuntimeClass, and only the
// FailedCreatePodSandBox Events, trimmed (TrimEvent) and indexed by
// reason. Neither is watched until the first List (workloadInformer adds
// the indexes when the informer is made, so that registering them starts
// nothing).
func AddToCache(opts *cache.Options, namespace string) {
	opts.ByObject[&corev1.Pod{}] = cache.ByObject{Transform: TrimPod(namespace)}
	opts.ByObject[&corev1.Event{}] = cache.ByObject{
		Field:     fields.OneTermEqualSelector(EventReasonField, health.ReasonSandboxFailed),
		Transform: TrimEvent,
	}
	opts.NewInformer = workloadInformer
}

// workloadInformer makes the cache's informers as controller-runtime does
// (toolscache.NewSharedIndexInformer), adding to the pods' the index on
// spec.runtimeClassName and to the Events' the index on reason. An index
// registered with the manager's IndexField would create the informer at
// once, and start it with the cache; added here, it exists from the
// informer's first object, and the informer is made on the first List.
func workloadInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	switch obj.(type) {
	case *corev1.Pod:
		indexers = withFieldIndex(indexers, PodRuntimeClassField, func(o client.Object) string {
			if c := o.(*corev1.Pod).Spec.RuntimeClassName; c != nil {
				return *c
			}
			return ""
		})
		indexers = withFieldIndex(indexers, PodNodeField, func(o client.Object) string { return o.(*corev1.Pod).Spec.NodeName })
	case *corev1.Event:
		indexers = withFieldIndex(indexers, EventReasonField, func(o client.Object) string { return o.(*corev1.Event).Reason })
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// withFieldIndex adds to indexers the field index the cache's List with
// client.MatchingFields{field: v} reads, keyed as controller-runtime's
// IndexField keys it: "field:<field>", each value both under its
// namespace ("<ns>/<v>") and under all of them ("__all_namespaces/<v>").
// TestWorkloadFailures lists through it, in a namespace and in all.
func withFieldIndex(indexers toolscache.Indexers, field string, value func(client.Object) string) toolscache.Indexers {
	out := toolscache.Indexers{}
	for k, v := range indexers {
		out[k] = v
	}
	out["field:"+field] = func(obj any) ([]string, error) {
		o, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", obj)
		}
		v := value(o)
		if v == "" {
			return nil, nil
		}
		if ns := o.GetNamespace(); ns != "" {
			return []string{ns + "/" + v, "__all_namespaces/" + v}, nil
		}
		return []string{"__all_namespaces/" + v}, nil
	}
	return out
}

// TrimPod returns the cache transform of Pods. The pods of namespace (the
// installer's) are kept whole. Of the others the cache keeps what a drain
// reads (drainView: name, namespace, UID, resource version, labels, the
// controller, a static pod's mirror annotation, the deletion time, the
// node, the emptyDir volumes' names, the phase) and, of a pod with a
// RuntimeClass, what the health gate reads: its creation time and
// RuntimeClass, its conditions' types, statuses and transition times and,
// of its containers' statuses (init and regular), the names and states
// (current and last). Other annotations and owners, the rest of the spec
// (containers, other volumes) and the rest of the status go: most of a
// pod, in a cluster-wide watch.
func TrimPod(namespace string) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Namespace == namespace {
			return obj, nil
		}
		meta := metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion}
		out := drainView(p, meta)
		if p.Spec.RuntimeClassName == nil {
			return out, nil
		}
		out.CreationTimestamp, out.Spec.RuntimeClassName = p.CreationTimestamp, p.Spec.RuntimeClassName
		for _, c := range p.Status.Conditions {
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
		}
		out.Status.InitContainerStatuses = trimStatuses(p.Status.InitContainerStatuses)
		out.Status.ContainerStatuses = trimStatuses(p.Status.ContainerStatuses)
		return out, nil
	}
}

// drainView is what a drain reads of a pod without a RuntimeClass: its
// node, phase, labels (for the drain's selector and the budgets'), its
// controller (a DaemonSet's pods are left alone), whether it is a static
// pod's mirror, being deleted, or has emptyDir volumes.
func drainView(p *corev1.Pod, meta metav1.ObjectMeta) *corev1.Pod {
	meta.Labels, meta.DeletionTimestamp = p.Labels, p.DeletionTimestamp
	if m, ok := p.Annotations[mirrorAnnotation]; ok {
		meta.Annotations = map[string]string{mirrorAnnotation: m}
	}
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Controller: o.Controller}}
		}
	}
	out := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}
	out.Status.Phase = p.Status.Phase
	return out
}

// mirrorAnnotation marks the API server's mirror of a static pod.
const mirrorAnnotation = "kubernetes.io/config.mirror"

func trimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{Name: cs.Name, State: trimState(cs.State), LastTerminationState: trimState(cs.LastTerminationState)}
	}
	return out
}

// trimState keeps a state's reason, message (cutMessage), exit code and
// times.
func trimState(s corev1.ContainerState) corev1.ContainerState {
	if w := s.Waiting; w != nil {
		s.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: cutMessage(w.Message)}
	}
	if t := s.Terminated; t != nil {
		s.Terminated = &corev1.ContainerStateTerminated{Reason: t.Reason, Message: cutMessage(t.Message), ExitCode: t.ExitCode, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
	}
	return s
}

// TrimEvent is the cache transform of Events (the cache holds the
// FailedCreatePodSandBox ones alone): each keeps its name, namespace, UID
// and resource version, the object it is about, its type, reason, source,
// count and times, and its message (cutMessage).
func TrimEvent(obj any) (any, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, UID: e.UID, ResourceVersion: e.ResourceVersion},
		InvolvedObject: corev1.ObjectReference{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name, UID: e.InvolvedObject.UID},
		Type:           e.Type, Reason: e.Reason, Message: cutMessage(e.Message), Source: e.Source, Count: e.Count,
		FirstTimestamp: e.FirstTimestamp, LastTimestamp: e.LastTimestamp, EventTime: e.EventTime, Series: e.Series,
	}, nil
}

// cutMessage shortens a message the cache keeps to twice
// health.MaxMessage bytes at most, at a rune boundary: still longer than a
// Failure's, which health.Failures cuts and marks.
func cutMessage(s string) string {
	n := 2 * health.MaxMessage
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
