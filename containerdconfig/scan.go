package containerdconfig

import (
	"bytes"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// expr is one top-level expression of a TOML document, located by the lines
// it occupies.
type expr struct {
	kind  unstable.Kind // Table, ArrayTable, KeyValue or Comment
	key   []string      // header of a table; full path of a key/value
	table []string      // the table a key/value is in
	text  string        // the comment, for Comment
	start int           // offset of the start of its first line
	end   int           // offset just past its last line (after the newline)
	line  int           // 1-based line of start
}

// scan lists the top-level expressions of data, which must already have
// been validated by toml.Unmarshal.
func scan(data []byte) []expr {
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	var out []expr
	var table []string
	line, counted := 1, 0 // line number at offset counted
	for p.NextExpression() {
		n := p.Expression()
		e := expr{kind: n.Kind}
		var first, last int
		switch n.Kind {
		case unstable.Comment:
			first, last = int(n.Raw.Offset), int(n.Raw.Offset+n.Raw.Length)
			e.text = string(n.Data)
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(n)
			e.key = table
			it := n.Key()
			it.Next()
			first = int(it.Node().Raw.Offset)
			last = first
			for k := n.Key(); k.Next(); {
				last = int(k.Node().Raw.Offset + k.Node().Raw.Length)
			}
		case unstable.KeyValue:
			e.table = table
			e.key = append(slices.Clone(table), keyParts(n)...)
			first, last = int(n.Raw.Offset), int(n.Raw.Offset+n.Raw.Length)
		default:
			continue
		}
		e.start = lineStart(data, first)
		e.end = lineEnd(data, last)
		line += bytes.Count(data[counted:e.start], []byte("\n"))
		counted = e.start
		e.line = line
		out = append(out, e)
		// A comment after an expression on the same line is its sibling.
		if c := n.Next(); c != nil && c.Valid() && c.Kind == unstable.Comment && n.Kind != unstable.Comment {
			out[len(out)-1].end = lineEnd(data, int(c.Raw.Offset+c.Raw.Length))
		}
	}
	return out
}

func keyParts(n *unstable.Node) []string {
	var parts []string
	for it := n.Key(); it.Next(); {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func lineStart(data []byte, off int) int {
	return bytes.LastIndexByte(data[:off], '\n') + 1
}

// lineEnd returns the offset after the newline that ends the line holding
// off, or len(data).
func lineEnd(data []byte, off int) int {
	if off > len(data) {
		return len(data)
	}
	i := bytes.IndexByte(data[off:], '\n')
	if i < 0 {
		return len(data)
	}
	return off + i + 1
}

// lineOfKey returns the line of a top-level key, or 0.
func lineOfKey(data []byte, key string) int {
	for _, e := range scan(data) {
		if e.kind == unstable.KeyValue && len(e.key) == 1 && e.key[0] == key {
			return e.line
		}
		if e.kind == unstable.Table || e.kind == unstable.ArrayTable {
			return 0
		}
	}
	return 0
}

func hasPrefix(key, prefix []string) bool {
	return len(key) >= len(prefix) && slices.Equal(key[:len(prefix)], prefix)
}

func dottedKey(parts []string) string {
	s := style{quote: '"'}
	k, err := s.renderKey(parts)
	if err != nil {
		return strings.Join(parts, ".")
	}
	return k
}
