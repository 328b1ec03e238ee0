package containerdconfig

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// AdoptHandler is AddHandler for a handler that someone else may have
// written: when the file defines the handler outside a shimkit block, it is
// taken over instead of refused. Its tables are replaced, where they are, by
// a managed block marked as adopted that keeps their original text as
// comment lines ("#| ..."), so that RemoveHandler puts that text back byte
// for byte: AdoptHandler then RemoveHandler gives data back. A handler
// defined in a form whose text cannot be kept and put back exactly (inline
// or dotted keys, tables in separate places of the file, tables inside
// another shimkit block) is refused with a *FileError wrapping ErrConflict,
// and nothing is written.
//
// On a file without the handler AdoptHandler is AddHandler; on a handler
// shimkit added or adopted before it updates the settings in place and
// keeps the original text.
func AdoptHandler(path string, data []byte, h RuntimeHandler) (out []byte, changed bool, err error) {
	return addHandler(path, data, h, addOptions{adopt: true})
}

// definesKey reports whether the expression defines key or part of it: a
// table under key, a key/value under it, or a key/value holding it inline.
func definesKey(e expr, key []string) bool {
	switch e.kind {
	case unstable.Table, unstable.ArrayTable:
		return hasPrefix(e.key, key)
	case unstable.KeyValue:
		return hasPrefix(e.key, key) || hasPrefix(key, e.key)
	}
	return false
}

// foreignHandler is the error for a handler the file defines outside a
// shimkit block of its own, located at its first definition.
func foreignHandler(path string, exprs []expr, blocks []block, key []string, name string) *FileError {
	fe := &FileError{Path: path, Key: dottedKey(key),
		Err: fmt.Errorf("%w: handler %s is defined here and was not written by shimkit; shimkit does not take it over unless adoption is asked for explicitly (AdoptHandler, Install.Adopt)", ErrConflict, name)}
	for _, e := range exprs {
		if !definesKey(e, key) {
			continue
		}
		fe.Line, fe.Column = e.line, 1
		if e.kind == unstable.KeyValue && !hasPrefix(e.table, key) {
			fe.Err = fmt.Errorf("%w: handler %s is defined inline here and was not written by shimkit; it is not taken over, and an inline definition cannot be adopted", ErrConflict, name)
		}
		for _, b := range blocks {
			if b.start <= e.start && e.start < b.end {
				fe.Err = fmt.Errorf("%w: handler %s is defined here inside shimkit's block %s, which is not the handler's own; it is not taken over", ErrConflict, name, b.id)
			}
		}
		break
	}
	return fe
}

// adopt replaces the tables of a handler defined outside shimkit's blocks
// by an adopted block that keeps their text.
func adopt(path string, data []byte, exprs []expr, blocks []block, key []string, s style, name string, body []byte) ([]byte, error) {
	start, end, err := adoptSpan(path, exprs, blocks, key, name)
	if err != nil {
		return nil, err
	}
	kept, noEOL, err := keepLines(path, data, start, end, s, key)
	if err != nil {
		return nil, err
	}
	suffix := markerAdopted
	if noEOL {
		suffix = markerAdoptedNoEOL
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(kept) + len(body) + 240)
	b.Write(data[:start])
	b.WriteString(markerBegin + handlerID(name) + suffix + " >>>" + s.nl)
	b.Write(kept)
	b.Write(body)
	b.WriteString(markerEnd + handlerID(name) + " <<<" + s.nl)
	b.Write(data[end:])
	return b.Bytes(), nil
}

// adoptSpan returns the lines that define the handler: from its first
// table header to the end of its last key/value, with nothing in between
// but its own tables, key/values and comments.
func adoptSpan(path string, exprs []expr, blocks []block, key []string, name string) (start, end int, err error) {
	first, last := -1, -1
	for i, e := range exprs {
		switch {
		case e.kind == unstable.KeyValue && !hasPrefix(e.table, key) && (hasPrefix(e.key, key) || hasPrefix(key, e.key)):
			// A dotted key or inline table outside the handler's own tables.
			return 0, 0, &FileError{Path: path, Line: e.line, Column: 1, Key: dottedKey(e.key),
				Err: fmt.Errorf("%w: handler %s is defined inline here; shimkit adopts only [table] definitions", ErrConflict, name)}
		case ownedBy(e, key):
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 0, 0, &FileError{Path: path, Key: dottedKey(key),
			Err: fmt.Errorf("%w: handler %s is defined in a form shimkit cannot adopt", ErrConflict, name)}
	}
	for i := first + 1; i < last; i++ {
		switch e := exprs[i]; {
		case e.kind == unstable.Comment && !strings.HasPrefix(e.text, markerBegin) && !strings.HasPrefix(e.text, markerEnd):
		case !ownedBy(e, key):
			return 0, 0, &FileError{Path: path, Line: e.line, Column: 1, Key: dottedKey(key),
				Err: fmt.Errorf("%w: handler %s is defined in separate places (lines %d to %d, with other configuration in between); shimkit adopts only a handler whose tables follow each other", ErrConflict, name, exprs[first].line, exprs[last].line)}
		}
	}
	start, end = exprs[first].start, exprs[last].end
	for _, b := range blocks {
		if start < b.end && b.start < end {
			return 0, 0, &FileError{Path: path, Line: exprs[first].line, Column: 1, Key: dottedKey(key),
				Err: fmt.Errorf("%w: handler %s overlaps shimkit's block %s; it cannot be adopted", ErrConflict, name, b.id)}
		}
	}
	return start, end, nil
}

// ownedBy reports whether the expression is a table of the handler at key
// or a key/value in one.
func ownedBy(e expr, key []string) bool {
	switch e.kind {
	case unstable.Table, unstable.ArrayTable:
		return hasPrefix(e.key, key)
	case unstable.KeyValue:
		return hasPrefix(e.table, key)
	}
	return false
}

// keepLines turns data[start:end] into kept comment lines: "#| " and the
// line, or "#|" alone for an empty line, each with its own line ending.
// A last line without a newline gets the file's, and noEOL says so.
func keepLines(path string, data []byte, start, end int, s style, key []string) (kept []byte, noEOL bool, err error) {
	line := bytes.Count(data[:start], []byte("\n")) + 1
	for _, l := range bytes.SplitAfter(data[start:end], []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		content := bytes.TrimSuffix(bytes.TrimSuffix(l, []byte("\n")), []byte("\r"))
		if bytes.ContainsFunc(content, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return nil, false, &FileError{Path: path, Line: line, Column: 1, Key: dottedKey(key),
				Err: fmt.Errorf("%w: this line of the handler holds a control character and cannot be kept as a comment; the handler cannot be adopted", ErrConflict)}
		}
		if len(content) == 0 {
			kept = append(kept, keptPrefix...)
			kept = append(kept, l...)
		} else {
			kept = append(kept, keptPrefix+" "...)
			kept = append(kept, l...)
		}
		if !bytes.HasSuffix(l, []byte("\n")) {
			kept = append(kept, s.nl...)
			noEOL = true
		}
		line++
	}
	return kept, noEOL, nil
}

// originalOf returns the text an adopted block keeps. The newline of a
// former last line without one is dropped only while the block still ends
// the file.
func originalOf(data []byte, b block) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(data[b.bodyStart:b.keptEnd], []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte(keptPrefix+" ")); ok {
			out = append(out, rest...)
		} else {
			out = append(out, bytes.TrimPrefix(l, []byte(keptPrefix))...)
		}
	}
	if b.noEOL && b.end == len(data) {
		out = out[:trimOneNewline(out, len(out))]
	}
	return out
}

// restoreAdopted replaces an adopted block by the text it keeps.
func restoreAdopted(data []byte, b block) []byte {
	out := make([]byte, 0, len(data))
	out = append(out, data[:b.start]...)
	out = append(out, originalOf(data, b)...)
	return append(out, data[b.end:]...)
}

// verifyRestorable checks that the adopted block in out gives back exactly
// the text it replaced in data.
func verifyRestorable(path string, data, out []byte, name string) error {
	blocks, err := findBlocks(path, out, scan(out))
	if err != nil {
		return err
	}
	if b, ok := blockByID(blocks, handlerID(name)); !ok || !b.adopted || !bytes.Equal(restoreAdopted(out, b), data) {
		return &FileError{Path: path, Err: fmt.Errorf("%w: handler %s cannot be adopted so that its text is put back exactly on removal", ErrConflict, name)}
	}
	return nil
}
