package decide

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Progress is what the metrics show of the rollout: its step (-1: none),
// whether it is paused, and the reason of a health gate that tripped now
// ("": none).
type Progress struct {
	Step    int
	Paused  bool
	Tripped string
}

// decisionNotices are the decision's Warnings: one per node no plan
// could be built for, and the refusal's one (pin emits none for it), when
// the status does not show it yet; then where the decision left the
// rollout: a tripped gate and a revert, each once.
func decisionNotices(obs *Snapshot, d Decision, rec *v1alpha1.RolloutStatus) []Notice {
	var out []Notice
	for _, v := range d.Unplanned {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: "InstallFailed", Action: "Install", Node: v.Node,
			Note: FailureNote(v.Node.Name, string(PlanReason(v.PlanErr)), v.PlanErr.Error())})
	}
	if obs.Refusal != nil && !obs.Refusal.Shown(obs.Shim) {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: obs.Refusal.Reason, Action: "Install", Note: obs.Refusal.Message})
	}
	dl := d.Delivered
	if dl.Tripped {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: dl.Halt.Reason, Action: "Rollout", Note: "the rollout halts: " + dl.Halt.Message})
	}
	if old := shimspec.RolloutOf(obs.Shim, obs.Hash); dl.Revert && obs.Reverted == "" && (old == nil || old.RevertedTo == "") {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonReverting, Action: "Rollout",
			Note: "the rollout of " + obs.Hash + " failed (" + RevertCause(nil, HaltTrip(rec.Halt)) + "): the nodes updated go back to revision " + rec.RevertedTo})
	}
	return out
}

// progressOf is the rollout's Progress as the decision leaves it.
func progressOf(obs *Snapshot, d Decision) Progress {
	dl := d.Delivered
	p := Progress{Step: -1, Paused: dl.Hold == HoldPaused}
	if len(obs.Steps) > 0 && obs.Reverted == "" && dl.Stage.Step < len(obs.Steps) {
		p.Step = dl.Stage.Step
	}
	if dl.Tripped {
		p.Tripped = dl.Halt.Reason
	}
	return p
}

// EventEvery is how often a Shim's Normal per-node Events (Note) are
// emitted while its rollout goes on: the notes of every reconcile in
// between are gathered, so that a rollout makes a few Events per reason,
// not one per reconcile. A settled rollout emits what it has at once.
const EventEvery = 5 * time.Second

// EventPlan is what a plan does with the Shim's gathered per-node Events:
// Emit them now, or hold them back until Due (then the Shim comes back).
type EventPlan struct {
	Emit bool
	Due  time.Time
}

// EventsAt paces the Shim's gathered Events: they go out when the rollout
// settled, or EventEvery after they last went out (emitted), else then.
func EventsAt(emitted, now time.Time, settled bool) EventPlan {
	if next := emitted.Add(EventEvery); !settled && now.Before(next) {
		return EventPlan{Due: next}
	}
	return EventPlan{Emit: true}
}

// Notice is an Event the plan says: one the reconcile found while it
// read its snapshot (an artifact resolved anew, a revert), one its plan
// decided (a node no plan could be built for, a tripped gate), or one an
// action says once the cluster took its write (Untaint.Said) or refused it
// (Evict.Blocked, with the API server's answer: Answered). It regards the
// reconciled Shim (About nil) or another Shim (a batch's partner), and
// relates to a node or a RuntimeClass (neither: the Shim alone). The
// executor emits Notices and makes none (hack/plancheck): every Event is
// in the plan. As an Action, it is emitted in its place among the others.
type Notice struct {
	Type, Reason, Action, Note string
	Node                       *corev1.Node
	Class                      *nodev1.RuntimeClass
	About                      *v1alpha1.Shim
}

func (Notice) action() {}

// Related is the object the Notice relates to: its node, else its
// RuntimeClass, else none (an untyped nil, as the events API wants).
func (n Notice) Related() runtime.Object {
	switch {
	case n.Node != nil:
		return n.Node
	case n.Class != nil:
		return n.Class
	}
	return nil
}

// Regarding is the Shim the Notice is about: About, or else shim (the
// reconciled one).
func (n Notice) Regarding(shim *v1alpha1.Shim) *v1alpha1.Shim {
	if n.About != nil {
		return n.About
	}
	return shim
}

// Answered is the Notice with the API server's answer to the write it
// tells of appended to its note (a refused eviction, a log not kept).
func (n Notice) Answered(err error) Notice {
	n.Note += ": " + err.Error()
	return n
}

// classNamed is a RuntimeClass an Event relates to by name alone (one the
// plan writes, not one it read).
func classNamed(name string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// MaxEventNodes is how many nodes an Event of a wave names.
const MaxEventNodes = 10

// Gathered is the one Normal Event of the per-node notes gathered under a
// reason and action (Note, a Job started): the number of nodes and the
// notes of the first MaxEventNodes, sorted, so that a wave of a hundred
// nodes makes one Event per reason, not a hundred.
func Gathered(reason, action string, notes []string) Notice {
	notes = slices.Sorted(slices.Values(notes))
	msg := strings.Join(notes[:min(len(notes), MaxEventNodes)], "; ")
	if more := len(notes) - MaxEventNodes; more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	if len(notes) > 1 {
		msg = fmt.Sprintf("%d nodes: %s", len(notes), msg)
	}
	return Notice{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Note: msg}
}
