package plan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
)

// TestFileShapes: a file of the artifact, a directory of it (source and
// path end in /) and a file the plan writes (content, no source); each
// refused with the field named when malformed, and nothing else may go
// inside a directory another file lays out.
func TestFileShapes(t *testing.T) {
	content := "binary_name = \"$(BUNDLE_DIR)/runsc\"\n"
	empty := ""
	for _, tc := range []struct {
		name string
		file plan.File
		want string // "": valid
	}{
		{"a directory", plan.File{Source: "gvisor-bin/", Path: "gvisor-bin/", Mode: 0o755}, ""},
		{"a directory elsewhere", plan.File{Source: "release/gvisor-bin/", Path: "sidecars/", Mode: 0o755}, ""},
		{"written content", plan.File{Path: "conf/runsc.toml", Mode: 0o644, Substitute: true, Content: &content}, ""},
		{"an empty file", plan.File{Path: "empty", Mode: 0o644, Content: &empty}, ""},
		{"content and a source", plan.File{Source: "runsc.toml", Path: "runsc.toml", Content: &content}, `files[1]: source "runsc.toml": none with content`},
		{"content at a directory", plan.File{Path: "conf/", Content: &content}, `files[1]: path "conf/"`},
		{"no source", plan.File{Path: "runsc.toml"}, `files[1]: source ""`},
		{"a directory to a file", plan.File{Source: "gvisor-bin/", Path: "gvisor-bin", Mode: 0o755}, `files[1]: path "gvisor-bin"`},
		{"a directory pattern", plan.File{Source: "gvisor-*/", Path: "gvisor-bin/", Mode: 0o755}, `files[1]: source "gvisor-*/"`},
		{"a directory escaping", plan.File{Source: "../bin/", Path: "bin/", Mode: 0o755}, `files[1]: source "../bin/"`},
		{"a directory into an escape", plan.File{Source: "bin/", Path: "../bin/", Mode: 0o755}, `files[1]: path "../bin/"`},
		{"the root", plan.File{Source: "/", Path: "all/", Mode: 0o755}, `files[1]: source "/"`},
		{"a file inside the directory", plan.File{Source: "x", Path: "sidecars/x", Mode: 0o644}, `files[2].path "sidecars/x": inside "sidecars/", the directory files[1] lays out`},
		{"a file where the directory goes", plan.File{Source: "x", Path: "sidecars", Mode: 0o644}, `files[2].path "sidecars": inside "sidecars/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := gvisorPlan()
			p.Files = []plan.File{p.Files[0], tc.file}
			if strings.HasPrefix(tc.name, "a file ") {
				p.Files = []plan.File{p.Files[0], {Source: "gvisor-bin/", Path: "sidecars/", Mode: 0o755}, tc.file}
			}
			err := p.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v; want %v naming %q", err, plan.ErrInvalid, tc.want)
			}
			if err != nil {
				return
			}
			data, err := plan.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := plan.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := back.Files[1]; got.Source != tc.file.Source || got.Path != tc.file.Path || (got.Content == nil) != (tc.file.Content == nil) || got.Content != nil && *got.Content != *tc.file.Content {
				t.Errorf("after a round trip: %+v, want %+v", got, tc.file)
			}
		})
	}
}
