package containerdconfig

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// style is how the surrounding file writes things, so that what shimkit adds
// looks like it belongs there.
type style struct {
	nl    string // "\n" or "\r\n"
	quote byte   // '"' or '\'' for quoted keys in table headers
	// template: the text goes into a k3s/RKE2 Go template, which k3s
	// renders with text/template before containerd reads it; a string
	// that holds "{{" is written so that no "{{" reaches the template.
	template bool
}

func detectStyle(data []byte) style {
	s := style{nl: "\n", quote: '"'}
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		s.nl = "\r\n"
	}
	// containerd 2.x writes plugin ids as literal strings ('...'), 1.x as
	// basic strings ("..."); follow the file's first plugin table.
	if i := bytes.Index(data, []byte("[plugins.")); i >= 0 && i+9 < len(data) && data[i+9] == '\'' {
		s.quote = '\''
	}
	return s
}

// renderKeyPart writes one part of a dotted key: bare when TOML allows it,
// quoted in the file's style otherwise.
func (s style) renderKeyPart(k string) (string, error) {
	bare := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			bare = false
			break
		}
	}
	if bare {
		return k, nil
	}
	return s.renderString(k), nil
}

// renderString writes a TOML string: a literal string ('...') in files
// that use them when the text allows it, a basic string ("...") otherwise.
//
// In a template, a string holding "{{" (which text/template would take for
// an action: k3s could not render the template) is a basic string with
// each '{' escaped as \u007B, so the template has no action there and
// containerd reads the value exactly.
func (s style) renderString(v string) string {
	braces := s.template && strings.Contains(v, "{{")
	if s.quote == '\'' && !strings.ContainsRune(v, '\'') && isPrintable(v) && !braces {
		return "'" + v + "'"
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '{' && braces:
			b.WriteString(`\u007B`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func (s style) renderKey(path []string) (string, error) {
	parts := make([]string, len(path))
	for i, p := range path {
		var err error
		if parts[i], err = s.renderKeyPart(p); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, "."), nil
}

// renderValue writes a TOML value. Strings are quoted in the file's style;
// other scalars are written by go-toml. Nothing is interpolated.
func (s style) renderValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return s.renderString(v), nil
	case []string:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = s.renderString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			var err error
			if parts[i], err = s.renderValue(e); err != nil {
				return "", err
			}
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	}
	out, err := toml.Marshal(map[string]any{"v": v})
	if err != nil {
		return "", err
	}
	val, ok := strings.CutPrefix(strings.TrimRight(string(out), "\n"), "v = ")
	if !ok || strings.Contains(val, "\n") {
		return "", fmt.Errorf("value %v does not render as one TOML line", v)
	}
	return val, nil
}

// renderTable writes a [header] with its scalar keys, then its sub-tables.
func (s style) renderTable(b *bytes.Buffer, header []string, kvs []keyValue, sub map[string]any) error {
	h, err := s.renderKey(header)
	if err != nil {
		return err
	}
	b.WriteString("[" + h + "]" + s.nl)
	for _, kv := range kvs {
		k, err := s.renderKeyPart(kv.key)
		if err != nil {
			return err
		}
		v, err := s.renderValue(kv.value)
		if err != nil {
			return fmt.Errorf("%s: %w", kv.key, err)
		}
		b.WriteString("  " + k + " = " + v + s.nl)
	}
	for _, k := range slices.Sorted(maps.Keys(sub)) {
		m := sub[k].(map[string]any)
		if err := s.renderOptions(b, append(slices.Clone(header), k), m); err != nil {
			return err
		}
	}
	return nil
}

// renderOptions writes a nested options map as a table and sub-tables.
func (s style) renderOptions(b *bytes.Buffer, header []string, m map[string]any) error {
	var kvs []keyValue
	sub := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if nested, ok := m[k].(map[string]any); ok {
			sub[k] = nested
			continue
		}
		kvs = append(kvs, keyValue{k, m[k]})
	}
	return s.renderTable(b, header, kvs, sub)
}

// renderHandler writes the tables of one runtime handler under runtimes.
func (s style) renderHandler(runtimes []string, h RuntimeHandler) ([]byte, error) {
	var b bytes.Buffer
	header := append(slices.Clone(runtimes), h.Name)
	sub := map[string]any{}
	if len(h.Options) > 0 {
		sub["options"] = h.Options
	}
	for k, v := range h.Settings {
		if m, ok := v.(map[string]any); ok {
			sub[k] = m // a table-valued setting is a sub-table
		}
	}
	if err := s.renderTable(&b, header, h.fields(), sub); err != nil {
		return nil, fmt.Errorf("%w: handler %s: %w", ErrInvalidHandler, h.Name, err)
	}
	return b.Bytes(), nil
}

// renderRuncKeeper writes the runc runtime exactly as containerd 1.6 and
// 1.7 define it built in, when the config defines no runtime: the runc v2
// shim with its options at their zero values.
func (s style) renderRuncKeeper(runtimes []string) ([]byte, error) {
	var b bytes.Buffer
	err := s.renderTable(&b, append(slices.Clone(runtimes), "runc"),
		[]keyValue{{"runtime_type", "io.containerd.runc.v2"}},
		map[string]any{"options": map[string]any{
			"BinaryName": "", "CriuImagePath": "", "CriuPath": "", "CriuWorkPath": "",
			"IoGid": 0, "IoUid": 0, "NoNewKeyring": false, "NoPivotRoot": false,
			"Root": "", "ShimCgroup": "", "SystemdCgroup": false,
		}})
	return b.Bytes(), err
}
