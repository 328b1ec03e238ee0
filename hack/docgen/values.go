package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// value is one key of values.yaml: its dotted path, its default (YAML,
// empty for a map that has keys) and the comment above it.
type value struct {
	path, def, doc string
}

// chartValues lists every key of a values file, depth first in the file's
// order, each with the comment block above it.
func chartValues(data []byte) ([]value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a YAML mapping")
	}
	var out []value
	var walk func(prefix string, m *yaml.Node) error
	walk = func(prefix string, m *yaml.Node) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			path := prefix + k.Value
			val := value{path: path, doc: comment(k.HeadComment)}
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				out = append(out, val)
				if err := walk(path+".", v); err != nil {
					return err
				}
				continue
			}
			def, err := flow(v)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			val.def = def
			out = append(out, val)
		}
		return nil
	}
	return out, walk("", doc.Content[0])
}

// comment is a head comment as one line of text, without the #s; the
// file's header (a block separated from the key by a blank line) is not
// part of it.
func comment(c string) string {
	if i := strings.LastIndex(c, "\n\n"); i >= 0 {
		c = c[i+2:]
	}
	var words []string
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if line != "" {
			words = append(words, line)
		}
	}
	return strings.Join(words, " ")
}

// flow is a value as one line of YAML.
func flow(v *yaml.Node) (string, error) {
	c := *v
	c.Style = yaml.FlowStyle
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if c.Kind == yaml.ScalarNode && c.Tag == "!!str" {
		c.Style = yaml.DoubleQuotedStyle
	}
	out, err := yaml.Marshal(&c)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// valuesReference is the Helm values page: one table, as helm-docs writes.
func valuesReference(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	vals, err := chartValues(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var b bytes.Buffer
	b.WriteString("# Helm values reference\n\n")
	b.WriteString("Every value of the `shimkit` chart (`charts/shimkit/values.yaml`), with its default and the comment\n")
	b.WriteString("above it there. A flag in the description (`--job-ttl [1h]`) is the operator's flag the value sets, with\n")
	b.WriteString("the operator's own default in brackets; an empty string leaves the flag unset. How to install the chart:\n")
	b.WriteString("[Getting started](../getting-started.md#install-with-helm).\n")
	b.WriteString("\n| Key | Default | Description |\n| --- | --- | --- |\n")
	for _, v := range vals {
		def := "`" + escapeCell(v.def) + "`"
		if v.def == "" {
			def = "" // a map whose keys follow
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.path, def, escapeCell(v.doc))
	}
	return b.Bytes(), nil
}
