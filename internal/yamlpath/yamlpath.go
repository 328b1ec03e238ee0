// Package yamlpath walks a decoded YAML or JSON document (maps, lists and
// scalars, as yaml.Unmarshal into any gives them) along a path, for the
// chart generator and the chart's tests. A step that does not apply gives
// nil, never a panic.
package yamlpath

import (
	"strconv"
	"strings"
)

// Get walks o along path: a map's key; in a list, "name=X" picks the
// element whose "name" is X, and a number the element at that index.
func Get(o any, path ...string) any {
	for _, p := range path {
		switch v := o.(type) {
		case map[string]any:
			o = v[p]
		case []any:
			o = element(v, p)
		default:
			return nil
		}
	}
	return o
}

// element picks the list element step names.
func element(l []any, step string) any {
	if name, ok := strings.CutPrefix(step, "name="); ok {
		for _, e := range l {
			if m, _ := e.(map[string]any); m != nil && m["name"] == name {
				return e
			}
		}
		return nil
	}
	if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(l) {
		return l[i]
	}
	return nil
}
