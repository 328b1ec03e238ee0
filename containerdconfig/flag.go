package containerdconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// OptionsFlag collects repeated key=value command-line flags into handler
// options (it implements flag.Value). Values are read as TOML (true, 3,
// "text", ["a", "b"]); anything that is not a TOML value is a string.
type OptionsFlag map[string]any

// String lists the options as key=value.
func (o OptionsFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, o[k]))
	}
	return strings.Join(parts, ",")
}

// Set adds one key=value.
func (o OptionsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("option %q is not key=value", s)
	}
	var doc struct{ V any }
	if err := toml.Unmarshal([]byte("V = "+v), &doc); err == nil && doc.V != nil {
		o[k] = doc.V
	} else {
		o[k] = v
	}
	return nil
}
