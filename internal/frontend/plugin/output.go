package plugin

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/shimkit/shimkit/internal/frontend/report"
)

// Text formats a command writes itself; the others are cli-runtime's
// printers of the command's document (json, yaml, jsonpath=...,
// jsonpath-as-json=..., jsonpath-file=..., go-template=...).
const (
	formatText = ""
	formatWide = "wide"
	formatName = "name"
)

// output is a command's -o: one of the command's text formats, or a
// printer of its document for machines.
type output struct {
	format  string
	text    []string // the text formats the command has ("" included)
	machine *genericclioptions.PrintFlags
	printer printers.ResourcePrinter // set by check for a machine format
}

// addOutput adds -o to the command, with its text formats.
func addOutput(cmd *cobra.Command, text ...string) *output {
	o := &output{text: append([]string{formatText}, text...), machine: genericclioptions.NewPrintFlags("").WithDefaultOutput("")}
	o.machine.NamePrintFlags = nil // -o name is the command's own, where it has one
	cmd.Flags().StringVarP(&o.format, "output", "o", "", fmt.Sprintf("output format: one of %s", strings.Join(o.allowed(), "|")))
	if tf := o.machine.TemplatePrinterFlags; tf != nil {
		tf.AddFlags(cmd)
	}
	return o
}

// allowed lists the formats, for help and errors.
func (o *output) allowed() []string {
	var out []string
	for _, f := range o.text {
		if f != formatText {
			out = append(out, f)
		}
	}
	out = append(out, o.machine.JSONYamlPrintFlags.AllowedFormats()...)
	templates := o.machine.TemplatePrinterFlags.AllowedFormats()
	slices.Sort(templates)
	for _, f := range templates {
		out = append(out, f+"=...")
	}
	return out
}

// check validates -o before the command reads anything: a text format of
// the command, or a printer cli-runtime builds (a jsonpath that does not
// parse is refused here).
func (o *output) check() error {
	if slices.Contains(o.text, o.format) {
		return nil
	}
	o.machine.OutputFormat = &o.format
	p, err := o.machine.ToPrinter()
	if err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			return usagef("-o %s: want one of %s", o.format, strings.Join(o.allowed(), "|"))
		}
		return usagef("-o %s: %v", o.format, err)
	}
	o.printer = p
	return nil
}

// write writes v as the document kind for a machine format, else with
// text (the format's own).
func (o *output) write(w io.Writer, kind string, v any, text func(format string) error) error {
	if o.printer == nil {
		return text(o.format)
	}
	doc, err := report.Document(kind, v)
	if err != nil {
		return err
	}
	return o.printer.PrintObj(doc, w)
}

// writeList writes the documents of kind for a machine format, as one
// List (kubectl's, apiVersion v1) of them.
func (o *output) writeList(w io.Writer, kind string, vs []report.PlanReport) error {
	items := make([]any, 0, len(vs))
	for _, v := range vs {
		doc, err := report.Document(kind, v)
		if err != nil {
			return err
		}
		items = append(items, doc.Object)
	}
	list := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "List", "items": items}}
	return o.printer.PrintObj(list, w)
}
