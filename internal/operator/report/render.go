package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Formats of Write: a table (wide adds the digest and the message), or
// the rows as JSON or YAML for machines.
const (
	FormatTable = ""
	FormatWide  = "wide"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// StatusReport is the Shim's status as kubectl shimkit status writes it
// for machines: the summary and a row per node.
type StatusReport struct {
	Shim     string    `json:"shim"`
	Ready    string    `json:"ready"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
	SpecHash string    `json:"specHash,omitempty"`
	Nodes    []NodeRow `json:"nodes"`
}

// Write writes the Shim's rows in the format, ages relative to now.
func Write(w io.Writer, shim *v1alpha1.Shim, rows []NodeRow, format string, now time.Time) error {
	rep := StatusReport{Shim: shim.Name, Ready: "Unknown", SpecHash: shim.Status.SpecHash, Nodes: rows}
	if c := meta.FindStatusCondition(shim.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		rep.Ready, rep.Reason, rep.Message = string(c.Status), c.Reason, c.Message
	}
	if format == FormatWide {
		return writeTable(w, rep, true, now)
	}
	return encode(w, rep, format, "wide, json or yaml", func() error { return writeTable(w, rep, false, now) })
}

// encode writes v as JSON or YAML for machines, or as text (FormatTable)
// with text; want says which formats there are, for an unknown one.
func encode(w io.Writer, v any, format, want string, text func() error) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case FormatYAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case FormatTable:
		return text()
	}
	return fmt.Errorf("output format %q: want %s", format, want)
}

func writeTable(w io.Writer, rep StatusReport, wide bool, now time.Time) error {
	fmt.Fprintf(w, "Shim %s: Ready=%s", rep.Shim, rep.Ready)
	if rep.Reason != "" {
		fmt.Fprintf(w, " (%s)", rep.Reason)
	}
	if rep.Message != "" {
		fmt.Fprintf(w, ": %s", rep.Message)
	}
	fmt.Fprintln(w)
	if len(rep.Nodes) == 0 {
		_, err := fmt.Fprintln(w, "No node is selected by the Shim or holds anything of it.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	cols := []string{"NODE", "RUNTIME", "STATE", "REVISION", "SINCE", "REASON"}
	if wide {
		cols = append(cols, "DIGEST", "MESSAGE")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rep.Nodes {
		cells := []string{r.Node, dash(r.Runtime), r.State, dash(short(r.Revision, 16)), age(r.Since, now), dash(r.Reason)}
		if wide {
			cells = append(cells, dash(r.Digest), dash(oneLine(r.Message)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
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
