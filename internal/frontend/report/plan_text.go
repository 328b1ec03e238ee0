package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ShortList is how many node names a wave or list shows as text before
// "and N more" (wide: all of them).
const ShortList = 5

// WritePlan writes the plan as text for a person: what changes in the
// spec, then what the Shim will say of itself (a refusal, a RuntimeClass
// it cannot own), then the waves (times absolute, with how far from now),
// the nodes skipped, the RuntimeClasses, and a summary line. wide lists
// every node; else each list shows ShortList names.
func WritePlan(w io.Writer, r PlanReport, wide bool, now time.Time) error {
	fmt.Fprintf(w, "Shim %s: target %s\n", r.Shim, r.Target)
	writeChanges(w, r.Changes)
	writeConsequences(w, r)
	if len(r.Waves) == 0 {
		fmt.Fprintln(w, "No node changes.")
	}
	for i, wv := range r.Waves {
		switch {
		case i > 0 && !wv.At.After(now):
			// As soon as the wave before succeeds: no time of its own.
			fmt.Fprintf(w, "Wave %d, after wave %d", i+1, i)
		default:
			fmt.Fprintf(w, "Wave %d, %s", i+1, when(wv.At, now))
		}
		if wv.AfterRunning {
			fmt.Fprint(w, ", once the Jobs running end")
		}
		if wv.Step != nil {
			fmt.Fprintf(w, ", step %d", *wv.Step)
		}
		n := len(wv.Install) + len(wv.Upgrade) + len(wv.Uninstall)
		fmt.Fprintf(w, ": %d %s\n", n, plural(n, "node", "nodes"))
		writeList(w, "install", wv.Install, wide)
		writeList(w, "upgrade", wv.Upgrade, wide)
		writeList(w, "uninstall", wv.Uninstall, wide)
		writeDrains(w, r.Drains, wv.Targets())
	}
	if r.Stopped != "" {
		fmt.Fprintf(w, "Then it stops: %s", r.Stopped)
		if r.Halt != "" {
			fmt.Fprintf(w, " (%s)", r.Halt)
		}
		fmt.Fprintln(w)
	}
	writeSkipped(w, r.Skipped, wide)
	for _, c := range r.RuntimeClasses {
		if c.Action != operator.ClassConflict {
			fmt.Fprintf(w, "RuntimeClass %s (handler %s): %s%s\n", c.Name, c.Handler, c.Action, classWhen(c.Action))
		}
	}
	s := r.Summary
	fmt.Fprintf(w, "Plan: %d to install, %d to upgrade, %d to uninstall, %d skipped, %d RuntimeClass %s.\n", s.Install, s.Upgrade, s.Uninstall, s.Skipped, s.RuntimeClasses, plural(s.RuntimeClasses, "change", "changes"))
	_, err := fmt.Fprintln(w, "Not in this plan: other Shims that would share a node's installer run, and the health gate's verdict on workloads.")
	return err
}

// writeChanges writes the spec's changes, old → new.
func writeChanges(w io.Writer, changes []Change) {
	if len(changes) == 0 {
		return
	}
	fmt.Fprintln(w, "Changes:")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, c := range changes {
		fmt.Fprintf(tw, "  %s\t%s → %s\n", c.Field, valueOr(c.Old), valueOr(c.New))
	}
	_ = tw.Flush()
}

func valueOr(v string) string {
	switch {
	case v == "":
		return "(not set)"
	case strings.ContainsAny(v, "\n\t\r"):
		// A file's content: quoted, on the table's one line.
		return strconv.Quote(v)
	}
	return v
}

// writeConsequences writes first what the Shim will say of itself once
// applied: a spec refused, a RuntimeClass it does not own.
func writeConsequences(w io.Writer, r PlanReport) {
	if r.Refused != nil {
		fmt.Fprintf(w, "Refused: %s: %s\n  Consequence: the Shim is Ready=False and Degraded (%s); no node is installed until the spec is fixed; uninstalls go on.\n", r.Refused.Reason, r.Refused.Message, r.Refused.Reason)
	}
	for _, c := range r.RuntimeClasses {
		if c.Action != operator.ClassConflict {
			continue
		}
		whose := "not the Shim's (no controller: an admin's or another tool's)"
		if c.Owner != "" {
			whose = "controlled by " + c.Owner
		}
		fmt.Fprintf(w, "Conflict: RuntimeClass %s (handler %s) is %s: left as it is.\n  Consequence: the Shim is Degraded (%s); pods cannot use it through the Shim.\n", c.Name, c.Handler, whose, v1alpha1.ReasonRuntimeClassConflict)
	}
}

// classWhen says when a RuntimeClass action happens.
func classWhen(action string) string {
	switch action {
	case operator.ClassCreate:
		return ", once the first node has the shim"
	case operator.ClassDelete:
		return ", once no node has the shim"
	}
	return ""
}

// writeList writes a labelled list of nodes, ShortList of them unless
// wide.
func writeList(w io.Writer, label string, nodes []string, wide bool) {
	if len(nodes) > 0 {
		fmt.Fprintf(w, "  %-9s  %s\n", label, names(nodes, wide))
	}
}

// names joins the nodes, the first ShortList of them unless wide.
func names(nodes []string, wide bool) string {
	if wide || len(nodes) <= ShortList {
		return strings.Join(nodes, ", ")
	}
	return shortNames(nodes) + " (-o wide lists them)"
}

// shortNames joins the first ShortList nodes, and says how many more.
func shortNames(nodes []string) string {
	if len(nodes) <= ShortList {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:ShortList], ", "), len(nodes)-ShortList)
}

// writeSkipped writes the nodes skipped, ShortList of them unless wide.
func writeSkipped(w io.Writer, skipped []SkippedNode, wide bool) {
	if len(skipped) == 0 {
		return
	}
	fmt.Fprintf(w, "Skipped %d %s:\n", len(skipped), plural(len(skipped), "node", "nodes"))
	shown := skipped
	if !wide && len(shown) > ShortList {
		shown = shown[:ShortList]
	}
	for _, s := range shown {
		fmt.Fprintf(w, "  %s: %s (%s)", s.Node, s.Reason, s.Detail)
		if s.Hint != "" {
			fmt.Fprintf(w, "; %s", s.Hint)
		}
		fmt.Fprintln(w)
	}
	if len(shown) < len(skipped) {
		fmt.Fprintf(w, "  and %d more (-o wide lists them)\n", len(skipped)-len(shown))
	}
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

// when says when a wave starts: now, or at a time and how far from now.
func when(at, now time.Time) string {
	if !at.After(now) {
		return "now"
	}
	return "at " + at.UTC().Format(time.RFC3339) + " (in " + duration.HumanDuration(at.Sub(now)) + ")"
}
