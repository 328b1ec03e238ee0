package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator"
)

// PlanReport is what kubectl shimkit plan shows of a preview: the waves
// of nodes the rollout changes, in order, what stops it, the nodes it
// skips and why, and its RuntimeClasses.
type PlanReport struct {
	Shim   string `json:"shim"`
	Target string `json:"target"`
	// Pinned: the target includes the pinned artifact; else the operator
	// resolves it when it rolls the spec out.
	Pinned  bool            `json:"pinned"`
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

// PlanWave is one wave: when it starts, its step, the nodes it installs
// (or labels, for preinstalled nodes) and those it uninstalls.
type PlanWave struct {
	At   time.Time `json:"at"`
	Step *int      `json:"step,omitempty"`
	// AfterRunning: the wave waits for the Jobs running before it.
	AfterRunning bool     `json:"afterRunning,omitempty"`
	Install      []string `json:"install,omitempty"`
	Uninstall    []string `json:"uninstall,omitempty"`
}

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
	for _, w := range p.Simulation.Waves {
		pw := PlanWave{At: w.At.UTC(), Install: w.Install, Uninstall: w.Remove, AfterRunning: w.AfterRunning}
		if w.Step >= 0 {
			step := w.Step + 1
			pw.Step = &step
		}
		r.Waves = append(r.Waves, pw)
	}
	r.Stopped = string(p.Simulation.Stopped)
	if h := p.Simulation.Halt; h != nil {
		r.Halt = h.Reason + ": " + h.Message
	}
	for _, v := range p.Views {
		if v.Matching && v.Skip != nil {
			r.Skipped = append(r.Skipped, SkippedNode{Node: v.Node.Name, Reason: v.Skip.Reason, Detail: v.Skip.Detail, Hint: decide.SkipHint(v.Skip.Reason)})
		}
	}
	slices.SortFunc(r.Skipped, func(a, b SkippedNode) int { return strings.Compare(a.Node, b.Node) })
	return r
}

// WritePlan writes the plan as text (relative to now), JSON or YAML.
func WritePlan(w io.Writer, r PlanReport, format string, now time.Time) error {
	return encode(w, r, format, "json or yaml", func() error { return writePlanText(w, r, now) })
}

func writePlanText(w io.Writer, r PlanReport, now time.Time) error {
	artifact := "the artifact pinned"
	if !r.Pinned {
		artifact = "the artifact resolved when the operator rolls it out"
	}
	fmt.Fprintf(w, "Shim %s: target %s (%s)\n", r.Shim, r.Target, artifact)
	if r.Refused != nil {
		fmt.Fprintf(w, "Refused: %s: %s\n  No node is installed until the spec is fixed; uninstalls go on.\n", r.Refused.Reason, r.Refused.Message)
	}
	if len(r.Waves) == 0 {
		fmt.Fprintln(w, "No node changes.")
	}
	for i, wv := range r.Waves {
		fmt.Fprintf(w, "Wave %d, %s", i+1, when(wv.At, now))
		if wv.AfterRunning {
			fmt.Fprint(w, ", once the Jobs running end")
		}
		if wv.Step != nil {
			fmt.Fprintf(w, ", step %d", *wv.Step)
		}
		fmt.Fprintln(w, ":")
		if len(wv.Install) > 0 {
			fmt.Fprintf(w, "  install    %s\n", strings.Join(wv.Install, ", "))
		}
		if len(wv.Uninstall) > 0 {
			fmt.Fprintf(w, "  uninstall  %s\n", strings.Join(wv.Uninstall, ", "))
		}
		writeDrains(w, r.Drains, wv.Install)
	}
	if r.Stopped != "" {
		fmt.Fprintf(w, "Then it stops: %s", r.Stopped)
		if r.Halt != "" {
			fmt.Fprintf(w, " (%s)", r.Halt)
		}
		fmt.Fprintln(w)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "Skipped %s: %s (%s)", s.Node, s.Reason, s.Detail)
		if s.Hint != "" {
			fmt.Fprintf(w, "; %s", s.Hint)
		}
		fmt.Fprintln(w)
	}
	for _, c := range r.RuntimeClasses {
		fmt.Fprintf(w, "RuntimeClass %s (handler %s): %s", c.Name, c.Handler, c.Action)
		switch {
		case c.Action == operator.ClassConflict && c.Owner != "":
			fmt.Fprintf(w, ", controlled by %s: left as it is", c.Owner)
		case c.Action == operator.ClassConflict:
			fmt.Fprint(w, ", not the Shim's (no controller: an admin's or another tool's): left as it is")
		}
		if c.Action == operator.ClassCreate {
			fmt.Fprint(w, " once the first node has the shim")
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w, "Not in this plan: other Shims that would share a node's installer run, and the health gate's verdict on workloads.")
	return err
}

// writeDrains writes what draining each of the nodes would do.
func writeDrains(w io.Writer, drains []operator.NodeDrain, nodes []string) {
	for _, d := range drains {
		if !slices.Contains(nodes, d.Node) {
			continue
		}
		fmt.Fprintf(w, "  drain %s: ", d.Node)
		if len(d.Evict) == 0 {
			fmt.Fprint(w, "no pod to evict")
		} else {
			fmt.Fprintf(w, "evict %s", strings.Join(d.Evict, ", "))
		}
		if len(d.Waiting) > 0 {
			fmt.Fprintf(w, "; waits for %s", strings.Join(d.Waiting, ", "))
		}
		fmt.Fprintln(w)
		writeBlocked(w, d.Blocked)
	}
}

// writeBlocked writes the pods kept from an eviction now, and why.
func writeBlocked(w io.Writer, blocked []decide.Blocked) {
	for _, b := range blocked {
		fmt.Fprintf(w, "    blocked %s: %s\n", b.Pod, b.Why)
	}
}

// when says when a wave starts: now, or at a time.
func when(at, now time.Time) string {
	if !at.After(now) {
		return "now"
	}
	return "at " + at.UTC().Format(time.RFC3339) + " (in " + at.Sub(now).Round(time.Minute).String() + ")"
}
