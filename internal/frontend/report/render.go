package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// The kinds of the documents kubectl shimkit writes for machines (-o
// json, yaml, jsonpath), under APIVersion: documents of the client, never
// served by the API server (whose group is containerd.x-k8s.io), so their
// group is the plugin's own.
const (
	APIVersion  = "kubectl.shimkit.dev/v1alpha1"
	KindStatus  = "ShimStatusReport"
	KindPlan    = "ShimPlan"
	KindRemoval = "ShimRemovalPlan"
)

// stateOrder is the order of the states in the status's summary.
var stateOrder = []string{StateCurrent, StateOutdated, StateInstalling, StateUninstalling, StateFailed, StatePending, StateToRemove, StateSkipped}

// StatusReport is the Shim's status as kubectl shimkit status writes it:
// how many of its nodes are in each state (counted from the rows), the
// Ready condition as the operator last wrote it, and a row per node.
type StatusReport struct {
	Shim string `json:"shim"`
	// States counts the rows by state.
	States   map[string]int `json:"states"`
	Ready    string         `json:"ready"`
	Reason   string         `json:"reason,omitempty"`
	Message  string         `json:"message,omitempty"`
	SpecHash string         `json:"specHash,omitempty"`
	Nodes    []NodeRow      `json:"nodes"`
}

// StatusOf is the report of the Shim's rows.
func StatusOf(shim *v1alpha1.Shim, rows []NodeRow) StatusReport {
	rep := StatusReport{Shim: shim.Name, States: map[string]int{}, Ready: "Unknown", SpecHash: shim.Status.SpecHash, Nodes: rows}
	if rep.Nodes == nil {
		rep.Nodes = []NodeRow{}
	}
	for _, r := range rows {
		rep.States[r.State]++
	}
	if c := meta.FindStatusCondition(shim.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		rep.Ready, rep.Reason, rep.Message = string(c.Status), c.Reason, c.Message
	}
	return rep
}

// Summary says how many nodes are in each state, from the rows:
// "6 nodes: 1 Current, 2 Installing, 3 Pending".
func (r StatusReport) Summary() string {
	total := 0
	var parts []string
	for _, s := range stateOrder {
		if n := r.States[s]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if total == 0 {
		return "no node"
	}
	return fmt.Sprintf("%d %s: %s", total, plural(total, "node", "nodes"), strings.Join(parts, ", "))
}

// Document is v as the document kubectl shimkit prints for machines: its
// JSON with apiVersion and kind, as the printers of k8s.io/cli-runtime
// take it.
func Document(kind string, v any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(APIVersion)
	u.SetKind(kind)
	return u, nil
}

// WriteStatus writes the report as a table (wide: with the digest, the
// revision a failed node tried, and the message), ages relative to now.
// Its first line is computed from the rows below it, with the Ready
// condition's status and reason as the operator last wrote them.
func WriteStatus(w io.Writer, rep StatusReport, wide bool, now time.Time) error {
	fmt.Fprintf(w, "Shim %s: %s; Ready=%s", rep.Shim, rep.Summary(), rep.Ready)
	if rep.Reason != "" {
		fmt.Fprintf(w, " (%s)", rep.Reason)
	}
	fmt.Fprintln(w)
	if len(rep.Nodes) == 0 {
		_, err := fmt.Fprintln(w, "No node is selected by the Shim or holds anything of it.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	cols := []string{"NODE", "RUNTIME", "STATE", "REVISION", "SINCE", "REASON"}
	if wide {
		cols = append(cols, "DIGEST", "ATTEMPTED", "MESSAGE")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rep.Nodes {
		cells := []string{r.Node, dash(r.Runtime), r.State, dash(short(r.Revision, 16)), age(r.Since, now), dash(r.Reason)}
		if wide {
			cells = append(cells, dash(r.Digest), dash(short(r.Attempted, 16)), dash(oneLine(r.Message)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// WriteNames writes a line per node of the report, as kubectl's -o name
// does (node/NAME).
func WriteNames(w io.Writer, rep StatusReport) error {
	for _, r := range rep.Nodes {
		if _, err := fmt.Fprintf(w, "node/%s\n", r.Node); err != nil {
			return err
		}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Row is the report's row of the node.
func Row(rep StatusReport, node string) (NodeRow, bool) {
	for _, r := range rep.Nodes {
		if r.Node == node {
			return r, true
		}
	}
	return NodeRow{}, false
}
