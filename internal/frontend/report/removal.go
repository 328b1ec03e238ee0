package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/shimkit/shimkit/operator"
)

// WriteRemoval writes what deleting a Shim would do now (a
// RemovalPreview) as text: the nodes uninstalled at once and after, the
// nodes that wait for their pods (naming them, and the
// PodDisruptionBudgets that would refuse their eviction), and the
// RuntimeClasses deleted last. wide lists every node; else each list
// shows ShortList names.
func WriteRemoval(w io.Writer, r *operator.RemovalPreview, wide bool) error {
	fmt.Fprintf(w, "Delete Shim %s:\n", r.Shim)
	if len(r.Uninstall)+len(r.Later)+len(r.Waiting) == 0 {
		fmt.Fprintln(w, "  no node has the shim")
	}
	if len(r.Uninstall) > 0 {
		fmt.Fprintf(w, "  uninstall now    %s\n", names(r.Uninstall, wide))
	}
	if len(r.Later) > 0 {
		fmt.Fprintf(w, "  uninstall after  %s\n", names(r.Later, wide))
	}
	for _, n := range r.Waiting {
		what := "waits until they are gone (deletePolicy Wait)"
		if r.Evict {
			what = "evicts them first (deletePolicy Evict)"
		}
		fmt.Fprintf(w, "  %s: %d pods run with the shim: %s; %s\n", n.Node, len(n.Pods), strings.Join(n.Pods, ", "), what)
		if r.Evict {
			writeBlocked(w, n.Blocked)
		}
	}
	if len(r.RuntimeClasses) > 0 {
		fmt.Fprintf(w, "  then delete RuntimeClass %s, once every node is clean\n", strings.Join(r.RuntimeClasses, ", "))
	}
	if len(r.Waiting) == 0 {
		return nil
	}
	note := "Pods are never stopped for you under deletePolicy Wait: move or delete them, and each node's uninstall goes on within seconds."
	if r.Evict {
		note = "Evictions go through the Eviction API, maxUpdate nodes at a time: a PodDisruptionBudget that refuses one keeps its node waiting."
	}
	_, err := fmt.Fprintln(w, note)
	return err
}
