package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator"
)

// PlanReport is what kubectl shimkit plan shows of a preview: what
// changes in the spec (old → new), how many nodes it installs, upgrades
// and uninstalls, the waves of nodes the rollout changes, in order, what
// stops it, the nodes it skips and why, and its RuntimeClasses.
type PlanReport struct {
	Shim   string `json:"shim"`
	Target string `json:"target"`
	// Pinned: the target includes the pinned artifact; else the operator
	// resolves it when it rolls the spec out.
	Pinned  bool        `json:"pinned"`
	Summary PlanSummary `json:"summary"`
	// Changes are the spec's fields that change, old → new (none for the
	// live spec once it is rolled out).
	Changes []Change        `json:"changes,omitempty"`
	Refused *decide.Refusal `json:"refused,omitempty"`
	Waves   []PlanWave      `json:"waves"`
	// Stopped says why the rollout stops before every node is done
	// (Paused, Halted, WaitingForWindow), with Halt's message.
	Stopped        string                  `json:"stopped,omitempty"`
	Halt           string                  `json:"halt,omitempty"`
	Skipped        []SkippedNode           `json:"skipped,omitempty"`
	RuntimeClasses []operator.ClassPreview `json:"runtimeClasses"`
	// Drains are what draining each node would do now, before its change
	// (rolloutStrategy.disruption Drain), in wave order.
	Drains []operator.NodeDrain `json:"drains,omitempty"`
}

// PlanSummary counts what the plan does: the nodes it installs (they
// have no revision of the Shim), upgrades (they have another) and
// uninstalls, the selected nodes it skips, and the RuntimeClasses it
// creates, updates, takes over or deletes.
type PlanSummary struct {
	Install        int `json:"install"`
	Upgrade        int `json:"upgrade"`
	Uninstall      int `json:"uninstall"`
	Skipped        int `json:"skipped"`
	RuntimeClasses int `json:"runtimeClasses"`
}

// PlanWave is one wave: when it starts, its step, the nodes it installs
// (or labels, for preinstalled nodes), those it upgrades from another
// revision, and those it uninstalls.
type PlanWave struct {
	At   time.Time `json:"at"`
	Step *int      `json:"step,omitempty"`
	// AfterRunning: the wave waits for the Jobs running before it.
	AfterRunning bool     `json:"afterRunning,omitempty"`
	Install      []string `json:"install,omitempty"`
	Upgrade      []string `json:"upgrade,omitempty"`
	Uninstall    []string `json:"uninstall,omitempty"`
}

// Targets are the nodes the wave brings to the target: installs and
// upgrades.
func (w PlanWave) Targets() []string { return append(slices.Clone(w.Install), w.Upgrade...) }

// SkippedNode is a selected node the rollout leaves alone, and why.
type SkippedNode struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	Hint   string `json:"hint,omitempty"`
}

// Plan is the report of a preview.
func Plan(p *operator.Preview) PlanReport {
	r := PlanReport{Shim: p.Shim.Name, Target: p.Target, Pinned: p.Pinned, Refused: p.Refusal, RuntimeClasses: p.Classes, Waves: []PlanWave{}}
	if r.RuntimeClasses == nil {
		r.RuntimeClasses = []operator.ClassPreview{}
	}
	installed := map[string]bool{}
	for _, n := range p.Installed {
		installed[n] = true
	}
	for _, w := range p.Waves {
		pw := PlanWave{At: w.At.UTC(), Uninstall: w.Remove, AfterRunning: w.AfterRunning}
		for _, n := range w.Install {
			if installed[n] {
				pw.Upgrade = append(pw.Upgrade, n)
			} else {
				pw.Install = append(pw.Install, n)
			}
		}
		if w.Step >= 0 {
			step := w.Step + 1
			pw.Step = &step
		}
		r.Summary.Install += len(pw.Install)
		r.Summary.Upgrade += len(pw.Upgrade)
		r.Summary.Uninstall += len(pw.Uninstall)
		r.Waves = append(r.Waves, pw)
	}
	r.Stopped = p.Stopped
	if h := p.Halt; h != nil {
		r.Halt = h.Reason + ": " + h.Message
	}
	for _, s := range p.Skipped {
		r.Skipped = append(r.Skipped, SkippedNode{Node: s.Node, Reason: s.Reason, Detail: s.Detail, Hint: decide.SkipHint(s.Reason)})
	}
	slices.SortFunc(r.Skipped, func(a, b SkippedNode) int { return strings.Compare(a.Node, b.Node) })
	r.Summary.Skipped = len(r.Skipped)
	for _, c := range r.RuntimeClasses {
		if classChanges(c.Action) {
			r.Summary.RuntimeClasses++
		}
	}
	return r
}

// classChanges: the action writes the RuntimeClass.
func classChanges(action string) bool {
	switch action {
	case operator.ClassCreate, operator.ClassUpdate, operator.ClassTakeOver, operator.ClassDelete:
		return true
	}
	return false
}

// HasChanges reports whether applying the plan changes anything: a field of
// the spec, a node, or a RuntimeClass (kubectl shimkit plan
// --exit-code).
func (r PlanReport) HasChanges() bool {
	s := r.Summary
	return len(r.Changes) > 0 || s.Install+s.Upgrade+s.Uninstall+s.RuntimeClasses > 0
}

// Next says in one line what the rollout of the plan does next: its first
// wave and when, or why nothing starts.
func Next(r PlanReport, now time.Time) string {
	stop := ""
	if r.Stopped != "" {
		stop = "it stops: " + r.Stopped
		if r.Halt != "" {
			stop += " (" + r.Halt + ")"
		}
	}
	if len(r.Waves) == 0 {
		if stop != "" {
			return "Next: no node starts; " + stop
		}
		return "Next: nothing; every node is as the spec says"
	}
	w := r.Waves[0]
	var parts []string
	for _, l := range []struct {
		label string
		nodes []string
	}{{"install", w.Install}, {"upgrade", w.Upgrade}, {"uninstall", w.Uninstall}} {
		if len(l.nodes) > 0 {
			parts = append(parts, l.label+" "+shortNames(l.nodes))
		}
	}
	line := "Next: " + when(w.At, now) + ", " + strings.Join(parts, "; ")
	if len(r.Waves) > 1 {
		line += fmt.Sprintf(", then %d more %s", len(r.Waves)-1, plural(len(r.Waves)-1, "wave", "waves"))
	}
	if stop != "" {
		line += "; then " + stop
	}
	return line
}
