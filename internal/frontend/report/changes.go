package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Change is one field of the spec that a plan changes, as its JSON path
// (fetchStrategy.anonHttp.location, handlers[1].runtimeClass.name) with
// its old and new value ("" when the field is not set on that side, `""`
// when it is set to the empty string, as a label selector's value may be),
// or the artifact pinned for the spec ("artifact").
type Change struct {
	Field string `json:"field"`
	Old   string `json:"old,omitempty"`
	New   string `json:"new,omitempty"`
}

// FieldArtifact is the Change of the pinned artifact.
const FieldArtifact = "artifact"

// Version is a spec and the artifact pinned for it (nil: not pinned
// yet).
type Version struct {
	Spec     *v1alpha1.ShimSpec
	Artifact *v1alpha1.ResolvedArtifact
}

// SpecChanges are the fields that differ from old to new, in path order,
// then the pinned artifact when it differs. An old without a spec (a new
// Shim) has every field of new as a change.
func SpecChanges(old, new Version) ([]Change, error) {
	before, err := leaves(old.Spec)
	if err != nil {
		return nil, err
	}
	after, err := leaves(new.Spec)
	if err != nil {
		return nil, err
	}
	var out []Change
	for path, o := range before {
		if n, ok := after[path]; !ok || n != o {
			out = append(out, Change{Field: path, Old: o, New: n})
		}
	}
	for path, n := range after {
		if _, ok := before[path]; !ok {
			out = append(out, Change{Field: path, New: n})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Field, b.Field) })
	if o, n := pinned(old), pinned(new); o != n {
		out = append(out, Change{Field: FieldArtifact, Old: o, New: n})
	}
	return out, nil
}

// pinned names the version's artifact: its digest, or what resolves it.
func pinned(v Version) string {
	switch {
	case v.Spec == nil:
		return ""
	case v.Artifact != nil && v.Artifact.Digest != "":
		return v.Artifact.Digest
	}
	return "(resolved when rolled out)"
}

// leaves flattens v's JSON into its leaf values by path.
func leaves(v *v1alpha1.ShimSpec) (map[string]string, error) {
	out := map[string]string{}
	if v == nil {
		return out, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	flatten("", tree, out)
	return out, nil
}

func flatten(path string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		for i, e := range t {
			flatten(path+"["+strconv.Itoa(i)+"]", e, out)
		}
	case string:
		out[path] = t
		if t == "" {
			out[path] = `""` // set, to the empty string: not "not set"
		}
	case nil:
	default:
		data, _ := json.Marshal(t)
		out[path] = string(data)
	}
}
