package containerdconfig

import (
	"bytes"
	"fmt"
	"regexp"
)

// k3s and RKE2 render containerd's config from a Go template. A template
// that extends the distribution's own config starts with the base template
// and adds TOML after it; shimkit edits such templates and nothing else.
var (
	templateAction = regexp.MustCompile(`^[ \t]*\{\{.*\}\}[ \t]*\r?$`)
	baseTemplate   = regexp.MustCompile(`^[ \t]*\{\{-?\s*template\s+"base"\s+\.\s*-?\}\}[ \t]*\r?$`)
)

// baseTemplateSeed is the template shimkit creates when there is none: the
// distribution's config, unchanged.
const baseTemplateSeed = "{{ template \"base\" . }}\n"

// maskedTemplate is a template whose action lines are turned into TOML
// comments of the same length, so it parses as TOML.
type maskedTemplate struct {
	data    []byte
	actions [][]byte // the original action lines, in order
}

// maskTemplate masks the whole-line actions of a template. Any other use of
// {{ }} (inside a value, a conditional around TOML) is not understood.
func maskTemplate(path string, data []byte) (*maskedTemplate, error) {
	m := &maskedTemplate{data: bytes.Clone(data)}
	if !hasBaseLine(data) {
		return nil, &FileError{Path: path, Line: 1, Column: 1,
			Err: fmt.Errorf("%w: the template does not start from {{ template \"base\" . }}; it replaces the distribution's config, so shimkit will not edit it", ErrTemplate)}
	}
	off := 0
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		content := bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case templateAction.Match(content):
			if !baseTemplate.Match(content) {
				return nil, &FileError{Path: path, Line: i + 1, Column: 1,
					Err: fmt.Errorf("%w: only the line {{ template \"base\" . }} is understood, not %q", ErrTemplate, bytes.TrimSpace(content))}
			}
			j := bytes.Index(content, []byte("{{"))
			m.data[off+j] = '#'
			m.actions = append(m.actions, content)
		case bytes.Contains(content, []byte("{{")):
			return nil, &FileError{Path: path, Line: i + 1, Column: bytes.Index(content, []byte("{{")) + 1,
				Err: fmt.Errorf("%w: template actions inside TOML lines cannot be edited safely", ErrTemplate)}
		}
		off += len(line)
	}
	return m, nil
}

// hasBaseLine reports whether a line of the template is
// {{ template "base" . }}: one that extends the distribution's config.
func hasBaseLine(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if baseTemplate.Match(line) {
			return true
		}
	}
	return false
}

// unmask restores the action lines in an edited masked template. The edit
// only touched shimkit's own blocks, so the masked lines are all there, in
// order.
func (m *maskedTemplate) unmask(edited []byte) ([]byte, error) {
	out := bytes.Clone(edited)
	from := 0
	for _, action := range m.actions {
		masked := bytes.Clone(action)
		masked[bytes.Index(masked, []byte("{{"))] = '#'
		i := indexLine(out[from:], masked)
		if i < 0 {
			return nil, fmt.Errorf("%w: template line %q was lost in the edit", ErrConflict, action)
		}
		copy(out[from+i:], action)
		from += i + len(action)
	}
	return out, nil
}

// indexLine finds line as a whole line of data.
func indexLine(data, line []byte) int {
	for off := 0; off <= len(data); {
		i := bytes.Index(data[off:], line)
		if i < 0 {
			return -1
		}
		at := off + i
		end := at + len(line)
		if (at == 0 || data[at-1] == '\n') && (end == len(data) || data[end] == '\n') {
			return at
		}
		off = at + 1
	}
	return -1
}
