package health

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shimkit/shimkit/internal/text"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The reasons of a Failure: the signal that counted, named as the kubelet
// or the runtime names it. Their order is the precedence of a pod's
// signals.
const (
	// ReasonSandboxFailed is a FailedCreatePodSandBox Event: the runtime
	// could not create the pod's sandbox.
	ReasonSandboxFailed = "FailedCreatePodSandBox"
	// ReasonCreateContainerError is a container waiting because the
	// runtime's CreateContainer failed.
	ReasonCreateContainerError = "CreateContainerError"
	// ReasonRunContainerError is a container waiting because the runtime's
	// StartContainer failed.
	ReasonRunContainerError = "RunContainerError"
	// ReasonStartError is a container whose current or last termination
	// is containerd's StartError (exit code 128, never started).
	ReasonStartError = "StartError"
	// ReasonContainerCannotRun is Docker's (cri-dockerd's) StartError.
	ReasonContainerCannotRun = "ContainerCannotRun"
	// ReasonHandlerMissing: an updated node's kubelet no longer reports one
	// of the Shim's handlers (node.status.runtimeHandlers): a failure of
	// the node, not of a pod (Failure.Pod is empty).
	ReasonHandlerMissing = "HandlerMissing"
)

// MaxMessage is the longest Failure.Message, in bytes (a longer one is
// cut at a rune boundary and ends with "…").
const MaxMessage = 256

// MaxNamed is how many pods a Verdict's message names at most.
const MaxNamed = 5

// Failure is one workload pod failing in a way that points at the runtime.
type Failure struct {
	Node, Namespace, Pod string
	RuntimeClass         string
	// Reason is one of the Reason constants.
	Reason string
	// Message is the kubelet's (or the runtime's) message, truncated to
	// MaxMessage bytes.
	Message string
	// At is when the signal was seen: the Event's time; a termination's
	// finishedAt; for a waiting container, the pod's latest time (its
	// creation or a condition's last transition).
	At time.Time
}

// Failures returns one Failure per failing pod (its first signal by the
// Reason constants' precedence), sorted by node, then namespace and pod.
// It considers the pods whose spec.runtimeClassName is in classes and
// whose spec.nodeName is in nodes; their signals are a container (init or
// regular) waiting with CreateContainerError or RunContainerError, a
// container not running again whose current or last termination has the
// reason StartError or ContainerCannotRun, and a FailedCreatePodSandBox
// Event in sandboxEvents whose involvedObject.uid is the pod's. Signals
// seen before since are ignored; Events of another reason are too.
// Duplicate pods (one namespace and name) count once.
func Failures(pods []*corev1.Pod, sandboxEvents []*corev1.Event, classes, nodes map[string]bool, since time.Time) []Failure {
	sandbox := sandboxFailures(sandboxEvents, since)
	var out []Failure
	seen := map[types.NamespacedName]bool{}
	for _, p := range pods {
		if p == nil || p.Spec.RuntimeClassName == nil || !classes[*p.Spec.RuntimeClassName] || !nodes[p.Spec.NodeName] {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if seen[key] {
			continue
		}
		seen[key] = true
		if f, ok := podFailure(p, sandbox, since); ok {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
	})
	return out
}

// signal is a pod's failure before it is a Failure.
type signal struct {
	reason, message string
	at              time.Time
}

// sandboxFailures are the latest FailedCreatePodSandBox Event of each pod
// seen at or after since.
func sandboxFailures(events []*corev1.Event, since time.Time) map[types.UID]signal {
	out := map[types.UID]signal{}
	for _, e := range events {
		if e == nil || e.Reason != ReasonSandboxFailed || e.InvolvedObject.UID == "" {
			continue
		}
		at := EventTime(e)
		if at.Before(since) {
			continue
		}
		prev, ok := out[e.InvolvedObject.UID]
		if ok && (at.Before(prev.at) || at.Equal(prev.at) && e.Message >= prev.message) {
			continue
		}
		out[e.InvolvedObject.UID] = signal{reason: ReasonSandboxFailed, message: e.Message, at: at}
	}
	return out
}

// EventTime is when an Event was last seen: the latest of its
// series.lastObservedTime, lastTimestamp, eventTime and firstTimestamp
// that are set (zero when none is).
func EventTime(e *corev1.Event) time.Time {
	at := e.FirstTimestamp.Time
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time} {
		if t.After(at) {
			at = t
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(at) {
		at = e.Series.LastObservedTime.Time
	}
	return at
}

// podFailure is the pod's first signal at or after since.
func podFailure(p *corev1.Pod, sandbox map[types.UID]signal, since time.Time) (Failure, bool) {
	s, ok := firstSignal(p, sandbox, since)
	if !ok {
		return Failure{}, false
	}
	return Failure{
		Node: p.Spec.NodeName, Namespace: p.Namespace, Pod: p.Name, RuntimeClass: *p.Spec.RuntimeClassName,
		Reason: s.reason, Message: text.Truncate(s.message, MaxMessage), At: s.at,
	}, true
}

func firstSignal(p *corev1.Pod, sandbox map[types.UID]signal, since time.Time) (signal, bool) {
	if s, ok := sandbox[p.UID]; ok {
		return s, true
	}
	statuses := slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
	podAt := podTime(p)
	if !podAt.Before(since) {
		for _, reason := range []string{ReasonCreateContainerError, ReasonRunContainerError} {
			for _, cs := range statuses {
				if w := cs.State.Waiting; w != nil && w.Reason == reason {
					return signal{reason: reason, message: w.Message, at: podAt}, true
				}
			}
		}
	}
	for _, reason := range []string{ReasonStartError, ReasonContainerCannotRun} {
		for _, cs := range statuses {
			if cs.State.Running != nil {
				continue // started since: recovered
			}
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t == nil || t.Reason != reason {
					continue
				}
				at := t.FinishedAt.Time
				if at.IsZero() {
					at = podAt
				}
				if !at.Before(since) {
					return signal{reason: reason, message: t.Message, at: at}, true
				}
			}
		}
	}
	return signal{}, false
}

// podTime is the latest time the pod's object records: its creation or a
// condition's last transition (a container that stops being ready, as
// one whose runtime fails it, flips the Ready condition).
func podTime(p *corev1.Pod) time.Time {
	at := p.CreationTimestamp.Time
	for _, c := range p.Status.Conditions {
		if c.LastTransitionTime.After(at) {
			at = c.LastTransitionTime.Time
		}
	}
	return at
}

// Thresholds are the gate's limits: it trips at PerNode failing pods on
// one node, or Total in all. 0 (or less) means no limit on that axis.
type Thresholds struct {
	PerNode, Total int
}

// Verdict is Check's judgement.
type Verdict struct {
	// Tripped: a limit is reached.
	Tripped bool
	// Nodes are the nodes with PerNode failing pods or more, sorted.
	Nodes []string
	// Failures are the failures judged, as given.
	Failures []Failure
	// Message says how many pods fail on how many nodes, the limits, and
	// names at most MaxNamed pods (those on Nodes first) with their
	// reasons ("" when nothing fails).
	Message string
}

// Check judges fs (as Failures returns them).
func (t Thresholds) Check(fs []Failure) Verdict {
	v := Verdict{Failures: fs}
	perNode := map[string]int{}
	for _, f := range fs {
		perNode[f.Node]++
	}
	if t.PerNode > 0 {
		for n, c := range perNode {
			if c >= t.PerNode {
				v.Nodes = append(v.Nodes, n)
			}
		}
		slices.Sort(v.Nodes)
	}
	v.Tripped = len(v.Nodes) > 0 || t.Total > 0 && len(fs) >= t.Total
	if len(fs) > 0 {
		v.Message = t.message(fs, perNode, v.Nodes)
	}
	return v
}

// message is "3 workload pods failing on 1 updated node (limit 2 per
// node, 5 in all): node-a: default/web-1 (CreateContainerError: ...),
// default/web-2 (...); node-b: ...; and 2 more".
func (t Thresholds) message(fs []Failure, perNode map[string]int, over []string) string {
	var b strings.Builder
	pods := 0
	for _, f := range fs {
		if f.Pod != "" {
			pods++
		}
	}
	fmt.Fprintf(&b, "%d workload %s failing", pods, plural(pods, "pod"))
	if lost := len(fs) - pods; lost > 0 {
		fmt.Fprintf(&b, " and %d %s lost", lost, plural(lost, "handler"))
	}
	fmt.Fprintf(&b, " on %d updated %s (%s): ", len(perNode), plural(len(perNode), "node"), t.limits())
	// The pods on nodes at their limit first, then the rest, each in
	// Failures' order; grouped by node.
	named := make([]Failure, 0, MaxNamed)
	for _, first := range []bool{true, false} {
		for _, f := range fs {
			if len(named) == MaxNamed {
				break
			}
			if _, isOver := slices.BinarySearch(over, f.Node); isOver == first {
				named = append(named, f)
			}
		}
	}
	for i, f := range named {
		switch {
		case i == 0:
			fmt.Fprintf(&b, "%s: ", f.Node)
		case f.Node != named[i-1].Node:
			fmt.Fprintf(&b, "; %s: ", f.Node)
		default:
			b.WriteString(", ")
		}
		if f.Pod == "" {
			fmt.Fprintf(&b, "the node (%s", f.Reason)
		} else {
			fmt.Fprintf(&b, "%s/%s (%s", f.Namespace, f.Pod, f.Reason)
		}
		if m := strings.Join(strings.Fields(f.Message), " "); m != "" {
			fmt.Fprintf(&b, ": %s", text.Truncate(m, 80))
		}
		b.WriteString(")")
	}
	if more := len(fs) - len(named); more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return b.String()
}

func (t Thresholds) limits() string {
	var parts []string
	if t.PerNode > 0 {
		parts = append(parts, fmt.Sprintf("%d per node", t.PerNode))
	}
	if t.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d in all", t.Total))
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return "limit " + strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
