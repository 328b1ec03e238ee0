package containerdconfig

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// What shimkit adds to a file is wrapped in marker comments, so that removal
// takes out exactly what was added and nothing a user wrote.
const (
	markerBegin   = "# >>> shimkit: "
	markerEnd     = "# <<< shimkit: "
	markerManaged = " (managed by shimkit; do not edit)"
	markerNoEOL   = " (managed by shimkit; do not edit; file had no final newline)"
	// An adopted block keeps the text it replaced as comment lines right
	// after its begin marker, each prefixed with keptPrefix, so that
	// removing the block puts that text back byte for byte.
	markerAdopted      = " (adopted by shimkit; the #| lines keep the original; do not edit)"
	markerAdoptedNoEOL = " (adopted by shimkit; the #| lines keep the original; do not edit; file had no final newline)"
	keptPrefix         = "#|"
	idHandler          = "runtime handler "
	idKeeper           = "default runtime "
)

func handlerID(name string) string { return idHandler + strconv.Quote(name) }
func keeperID(name string) string  { return idKeeper + strconv.Quote(name) }

// block is a managed block found in a file.
type block struct {
	id         string
	start, end int // the whole block, marker lines included
	bodyStart  int // after the begin marker line
	keptEnd    int // after the kept original lines of an adopted block; bodyStart otherwise
	bodyEnd    int // at the start of the end marker line
	noEOL      bool
	adopted    bool
}

// text returns the bytes of the whole block.
func (b block) text(data []byte) []byte { return data[b.start:b.end] }

// findBlocks lists the managed blocks of data in file order.
func findBlocks(path string, data []byte, exprs []expr) ([]block, error) {
	var out []block
	var open *block
	for _, e := range exprs {
		if e.kind != unstable.Comment {
			continue
		}
		t := strings.TrimRight(e.text, " \t")
		switch {
		case strings.HasPrefix(t, markerBegin) && strings.HasSuffix(t, " >>>"):
			if open != nil {
				return nil, &FileError{Path: path, Line: e.line, Column: 1,
					Err: fmt.Errorf("%w: shimkit block %s is not closed before another begins", ErrConflict, open.id)}
			}
			id := strings.TrimSuffix(strings.TrimPrefix(t, markerBegin), " >>>")
			b := &block{start: e.start, bodyStart: e.end, keptEnd: e.end}
			switch {
			case strings.HasSuffix(id, markerNoEOL):
				b.id, b.noEOL = strings.TrimSuffix(id, markerNoEOL), true
			case strings.HasSuffix(id, markerAdoptedNoEOL):
				b.id, b.adopted, b.noEOL = strings.TrimSuffix(id, markerAdoptedNoEOL), true, true
			case strings.HasSuffix(id, markerAdopted):
				b.id, b.adopted = strings.TrimSuffix(id, markerAdopted), true
			default:
				b.id = strings.TrimSuffix(id, markerManaged)
			}
			open = b
		case open != nil && open.adopted && open.keptEnd == e.start && strings.HasPrefix(e.text, keptPrefix):
			open.keptEnd = e.end // a kept line of the original
		case strings.HasPrefix(t, markerEnd) && strings.HasSuffix(t, " <<<"):
			id := strings.TrimSuffix(strings.TrimPrefix(t, markerEnd), " <<<")
			if open == nil || open.id != id {
				return nil, &FileError{Path: path, Line: e.line, Column: 1,
					Err: fmt.Errorf("%w: shimkit end marker for %s without its begin marker", ErrConflict, id)}
			}
			open.bodyEnd, open.end = e.start, e.end
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		return nil, &FileError{Path: path, Line: bytes.Count(data[:open.start], []byte("\n")) + 1, Column: 1,
			Err: fmt.Errorf("%w: shimkit block %s has no end marker", ErrConflict, open.id)}
	}
	return out, nil
}

func blockByID(blocks []block, id string) (block, bool) {
	for _, b := range blocks {
		if b.id == id {
			return b, true
		}
	}
	return block{}, false
}

// appendBlock adds a managed block at the end of data, separated from what
// is there by one blank line.
func appendBlock(data []byte, s style, id string, body []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + len(body) + 160)
	b.Write(data)
	suffix := markerManaged
	switch {
	case len(data) == 0:
	case bytes.HasSuffix(data, []byte("\n")):
		b.WriteString(s.nl)
	default:
		b.WriteString(s.nl + s.nl)
		suffix = markerNoEOL
	}
	b.WriteString(markerBegin + id + suffix + " >>>" + s.nl)
	b.Write(body)
	b.WriteString(markerEnd + id + " <<<" + s.nl)
	return b.Bytes()
}

// cutBlock removes a managed block and the separator appendBlock added.
func cutBlock(data []byte, b block) []byte {
	start, end := cutRange(data, b)
	return slices.Concat(data[:start], data[end:])
}

// cutRange returns what cutBlock removes: the block and the separator
// before it. When the file had no final newline and something was written
// after the block since, the newline that ends the former last line stays.
func cutRange(data []byte, b block) (start, end int) {
	start = b.start
	switch {
	case b.noEOL:
		start = trimOneNewline(data, start)
		if b.end == len(data) {
			start = trimOneNewline(data, start)
		}
	case isBlankLineBefore(data, start):
		start = trimOneNewline(data, start)
	}
	return start, b.end
}

// trimOneNewline returns the offset of the newline (LF or CRLF) ending just
// before off, or off when there is none.
func trimOneNewline(data []byte, off int) int {
	switch {
	case off >= 2 && data[off-2] == '\r' && data[off-1] == '\n':
		return off - 2
	case off >= 1 && data[off-1] == '\n':
		return off - 1
	}
	return off
}

// isBlankLineBefore reports whether the line that ends at off is empty.
func isBlankLineBefore(data []byte, off int) bool {
	p := trimOneNewline(data, off)
	return p != off && p > 0 && trimOneNewline(data, p) != p
}

// decode unmarshals a document that is known to be valid.
func decode(path string, data []byte) (map[string]any, error) {
	tree := map[string]any{}
	if err := toml.Unmarshal(data, &tree); err != nil {
		return nil, parseError(path, err)
	}
	return tree, nil
}

// leaves flattens a decoded tree to its leaf values by path, skipping the
// subtree at skip. Empty tables are leaves too.
func leaves(tree map[string]any, prefix []string, skip []string, out map[string]leaf) {
	for k, v := range tree {
		p := append(slices.Clone(prefix), k)
		if skip != nil && slices.Equal(p, skip) {
			continue
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			leaves(m, p, skip, out)
			continue
		}
		out[strings.Join(quoteAll(p), ".")] = leaf{p, v}
	}
}

type leaf struct {
	path  []string
	value any
}

func quoteAll(p []string) []string {
	q := make([]string, len(p))
	for i, s := range p {
		q[i] = strconv.Quote(s)
	}
	return q
}

// supersetOf checks that every setting of before (outside skip) is in after
// with the same value: the edit lost nothing. It returns the first setting
// that differs.
func supersetOf(before, after map[string]any, skip []string) (string, bool) {
	b := map[string]leaf{}
	leaves(before, nil, skip, b)
	for _, k := range slices.Sorted(maps.Keys(b)) {
		l := b[k]
		got := lookup(after, l.path)
		if m, ok := l.value.(map[string]any); ok && len(m) == 0 {
			if _, ok := got.(map[string]any); ok {
				continue
			}
		}
		if !reflect.DeepEqual(got, l.value) {
			return dottedKey(l.path), false
		}
	}
	return "", true
}
