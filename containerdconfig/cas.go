package containerdconfig

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// ErrConcurrentEdit: another writer changed a file after shimkit did, so
// that shimkit's change cannot be undone without losing their edit; the
// file was left exactly as it is.
var ErrConcurrentEdit = errors.New("file changed by another writer after shimkit")

// fileState is what a path holds: bytes, or nothing.
type fileState struct {
	data   []byte
	exists bool
}

func (s fileState) equal(o fileState) bool {
	return s.exists == o.exists && bytes.Equal(s.data, o.data)
}

func concurrent(path, format string, args ...any) error {
	return &FileError{Path: path, Err: fmt.Errorf("%w: "+format+"; the file was left as it is", append([]any{ErrConcurrentEdit}, args...)...)}
}

// undo returns what the file must hold to undo one change, given what it
// holds now (cur): the original while cur is exactly what the change
// wrote; otherwise cur with only the shimkit blocks the change touched
// undone.
func undo(path string, template bool, e journalEntry, cur fileState) (fileState, error) {
	orig := fileState{e.Before, e.Existed}
	written := fileState{e.After, !e.Removed}
	switch {
	case cur.equal(written), cur.equal(orig):
		return orig, nil
	case e.Removed:
		return cur, concurrent(path, "shimkit removed this file and it has been written again since")
	case !cur.exists && !e.Existed:
		return cur, nil // shimkit created it and someone removed it: nothing is left to undo
	case !cur.exists:
		return cur, concurrent(path, "the file shimkit edited is gone")
	}
	base := e.Before
	if !e.Existed {
		base = e.Seed
	}
	out, err := revertBlocks(path, template, base, e.After, cur.data)
	if err != nil {
		return cur, err
	}
	if !e.Existed && bytes.Equal(out, e.Seed) {
		return fileState{}, nil // only what shimkit created it with is left
	}
	return fileState{out, true}, nil
}

// parsed is a file as revertBlocks sees it: its settings and its shimkit
// blocks, found on the masked text of a template (same offsets).
type parsed struct {
	tree   map[string]any
	blocks map[string][]block
	order  []string // block ids in file order
}

func parseBlocks(path string, template bool, data []byte) (parsed, error) {
	masked := data
	if template {
		m, err := maskTemplate(path, data)
		if err != nil {
			return parsed{}, err
		}
		masked = m.data
	}
	tree, err := decode(path, masked)
	if err != nil {
		return parsed{}, err
	}
	list, err := findBlocks(path, masked, scan(masked))
	if err != nil {
		return parsed{}, err
	}
	p := parsed{tree: tree, blocks: map[string][]block{}}
	for _, b := range list {
		if p.blocks[b.id] == nil {
			p.order = append(p.order, b.id)
		}
		p.blocks[b.id] = append(p.blocks[b.id], b)
	}
	return p, nil
}

// one returns the only block with that id.
func (p parsed) one(id string) (block, bool) {
	if bs := p.blocks[id]; len(bs) == 1 {
		return bs[0], true
	}
	return block{}, false
}

// revertBlocks undoes, in cur, the shimkit blocks that differ between base
// (what the change edited) and after (what it wrote), and checks that the
// result holds base's values where the change changed something and cur's
// everywhere else.
func revertBlocks(path string, template bool, base, after, cur []byte) ([]byte, error) {
	pb, err := parseBlocks(path, template, base)
	if err != nil {
		return nil, fmt.Errorf("journal of %s: the original does not parse: %w", path, err)
	}
	pa, err := parseBlocks(path, template, after)
	if err != nil {
		return nil, fmt.Errorf("journal of %s: what shimkit wrote does not parse: %w", path, err)
	}
	pc, err := parseBlocks(path, template, cur)
	if err != nil {
		return nil, concurrent(path, "the file no longer parses (%w)", err)
	}
	type edit struct {
		start, end int
		repl       []byte
	}
	var edits []edit
	var appends []block
	for _, id := range pa.order {
		a, ok := pa.one(id)
		if !ok {
			return nil, fmt.Errorf("journal of %s: shimkit block %s is there twice", path, id)
		}
		b, inBase := pb.one(id)
		if inBase && bytes.Equal(b.text(base), a.text(after)) {
			continue // not touched by the change
		}
		c, inCur := pc.one(id)
		switch {
		case len(pc.blocks[id]) == 0 && !inBase:
			continue // the block the change added is gone: nothing to undo
		case !inCur:
			return nil, concurrent(path, "shimkit's block %s is gone or there more than once", id)
		case !bytes.Equal(c.text(cur), a.text(after)):
			return nil, concurrent(path, "shimkit's block %s was edited after shimkit wrote it", id)
		case inBase:
			edits = append(edits, edit{c.start, c.end, b.text(base)})
		case a.adopted:
			edits = append(edits, edit{c.start, c.end, originalOf(cur, c)})
		default:
			s, e := cutRange(cur, c)
			edits = append(edits, edit{s, e, nil})
		}
	}
	for _, id := range pb.order {
		b, ok := pb.one(id)
		if !ok || len(pa.blocks[id]) > 0 {
			continue
		}
		// The change removed the block.
		switch {
		case len(pc.blocks[id]) > 0:
			return nil, concurrent(path, "shimkit's block %s, which the change removed, has been written again", id)
		case b.adopted:
			orig := originalOf(base, b)
			at := indexText(cur, orig)
			if at < 0 {
				return nil, concurrent(path, "the handler text shimkit put back for %s was edited or is there more than once", id)
			}
			edits = append(edits, edit{at, at + len(orig), b.text(base)})
		default:
			appends = append(appends, b)
		}
	}
	slices.SortFunc(edits, func(x, y edit) int { return y.start - x.start })
	out := bytes.Clone(cur)
	for i, e := range edits {
		if i > 0 && e.end > edits[i-1].start {
			return nil, concurrent(path, "shimkit's blocks overlap")
		}
		out = slices.Concat(out[:e.start], e.repl, out[e.end:])
	}
	for _, b := range appends {
		out = appendBlock(out, detectStyle(out), b.id, base[b.bodyStart:b.bodyEnd])
	}
	pr, err := parseBlocks(path, template, out)
	if err != nil {
		return nil, concurrent(path, "undoing shimkit's blocks would break the file (%w)", err)
	}
	if k, ok := keepsOthers(pb.tree, pa.tree, pc.tree, pr.tree); !ok {
		return nil, concurrent(path, "undoing shimkit's blocks would not leave %s as it was before shimkit's change with the other writer's edits", k)
	}
	return out, nil
}

// keepsOthers checks the undone file: where the change changed a setting
// (base and after differ), it has base's value; everywhere else, cur's.
func keepsOthers(base, after, cur, result map[string]any) (string, bool) {
	lb, la, lc, lr := map[string]leaf{}, map[string]leaf{}, map[string]leaf{}, map[string]leaf{}
	leaves(base, nil, nil, lb)
	leaves(after, nil, nil, la)
	leaves(cur, nil, nil, lc)
	leaves(result, nil, nil, lr)
	changed := map[string]bool{}
	for k := range merged(lb, la) {
		b, inB := lb[k]
		a, inA := la[k]
		if inB != inA || !reflect.DeepEqual(b.value, a.value) {
			changed[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(merged(lb, la, lc, lr))) {
		ref := lc
		if changed[k] {
			ref = lb
		}
		l, present := ref[k]
		if !present {
			l = firstLeaf(k, lb, la, lc, lr)
		}
		if !holds(result, l, present, ref) {
			return dottedKey(l.path), false
		}
	}
	return "", true
}

func merged(ms ...map[string]leaf) map[string]leaf {
	out := map[string]leaf{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func firstLeaf(k string, ms ...map[string]leaf) leaf {
	for _, m := range ms {
		if l, ok := m[k]; ok {
			return l
		}
	}
	return leaf{}
}

// holds reports whether tree has the leaf's value at its path (any table
// for an empty one). When !present it must have nothing there, or a table
// whose settings are leaves of ref, checked on their own.
func holds(tree map[string]any, l leaf, present bool, ref map[string]leaf) bool {
	got := lookup(tree, l.path)
	if !present {
		if _, isTable := got.(map[string]any); isTable {
			for _, r := range ref {
				if len(r.path) > len(l.path) && hasPrefix(r.path, l.path) {
					return true
				}
			}
		}
		return got == nil
	}
	if m, ok := l.value.(map[string]any); ok && len(m) == 0 {
		_, isTable := got.(map[string]any)
		return isTable
	}
	return reflect.DeepEqual(got, l.value)
}

// indexText returns where text occurs in data as whole lines, when it
// occurs exactly once, or -1.
func indexText(data, text []byte) int {
	at := -1
	for off := 0; off <= len(data) && len(text) > 0; {
		i := bytes.Index(data[off:], text)
		if i < 0 {
			break
		}
		s, e := off+i, off+i+len(text)
		if (s == 0 || data[s-1] == '\n') && (e == len(data) || data[e-1] == '\n' || data[e] == '\n' || data[e] == '\r') {
			if at >= 0 {
				return -1
			}
			at = s
		}
		off = s + 1
	}
	return at
}
