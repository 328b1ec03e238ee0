package report_test

import (
	"reflect"
	"testing"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestSpecChangesEmptyValue: a field set to the empty string (kind's
// control-plane label value in a nodeSelector) is a change shown as "",
// never as a field that is not set.
func TestSpecChangesEmptyValue(t *testing.T) {
	const cp = "node-role.kubernetes.io/control-plane"
	spec := func(sel map[string]string) *v1alpha1.ShimSpec {
		return &v1alpha1.ShimSpec{NodeSelector: sel}
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     []report.Change
	}{
		{"added", map[string]string{"a": "x"}, map[string]string{"a": "x", cp: ""}, []report.Change{{Field: "nodeSelector." + cp, New: `""`}}},
		{"removed", map[string]string{cp: ""}, nil, []report.Change{{Field: "nodeSelector." + cp, Old: `""`}}},
		{"to a value", map[string]string{cp: ""}, map[string]string{cp: "true"}, []report.Change{{Field: "nodeSelector." + cp, Old: `""`, New: "true"}}},
		{"unchanged", map[string]string{cp: ""}, map[string]string{cp: ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := report.SpecChanges(report.Version{Spec: spec(tc.old)}, report.Version{Spec: spec(tc.new)})
			if err != nil {
				t.Fatal(err)
			}
			var fields []report.Change
			for _, c := range got {
				if c.Field != report.FieldArtifact {
					fields = append(fields, c)
				}
			}
			if !reflect.DeepEqual(fields, tc.want) {
				t.Errorf("changes %+v, want %+v", fields, tc.want)
			}
		})
	}
}
