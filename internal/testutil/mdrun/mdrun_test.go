package mdrun

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestParse: the blocks in page order with their section, fence line,
// language, text and markers; every malformed page is refused naming the
// line.
func TestParse(t *testing.T) {
	page := strings.Join([]string{
		"# Title",                // 1
		"",                       // 2
		"```sh",                  // 3
		"echo top",               // 4
		"```",                    // 5
		"## First",               // 6
		"<!-- tutorial: env -->", // 7
		"```sh",                  // 8
		"export A=1",             // 9
		"```",                    // 10
		"### Not a section",      // 11
		"```yaml",                // 12
		"a: b",                   // 13
		"",                       // 14
		"```",                    // 15
		"## Second",              // 16
		"<!-- tutorial: skip needs a browser -->", // 17
		"",                  // 18
		"```sh",             // 19
		"xdg-open x",        // 20
		"```",               // 21
		"  ```sh",           // 22
		"  cd sub",          // 23
		"    echo indented", // 24
		"  ```",             // 25
		"````text",          // 26
		"```sh",             // 27
		"````",              // 28
		"```",               // 29
		"```",               // 30
	}, "\n") + "\n"
	got, err := Parse([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Section: "", Line: 3, Lang: "sh", Text: "echo top\n"},
		{Section: "First", Line: 8, Lang: "sh", Text: "export A=1\n", Env: true},
		{Section: "First", Line: 12, Lang: "yaml", Text: "a: b\n\n"},
		{Section: "Second", Line: 19, Lang: "sh", Text: "xdg-open x\n", Skip: "needs a browser"},
		{Section: "Second", Line: 22, Lang: "sh", Text: "cd sub\n  echo indented\n"},
		{Section: "Second", Line: 26, Lang: "text", Text: "```sh\n"},
		{Section: "Second", Line: 29, Lang: "", Text: ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
	runs := 0
	for _, b := range got {
		if b.Runs() {
			runs++
		}
	}
	if runs != 2 {
		t.Errorf("%d blocks run, want 2 (line 3 and 22)", runs)
	}

	for _, tt := range []struct {
		name, page, want string
	}{
		{"unclosed fence", "text\n```sh\necho\n", "line 2: the sh block's fence is never closed"},
		{"closed by a shorter fence", "````sh\necho\n```\n", "line 1: the sh block's fence is never closed"},
		{"skip without a reason", "<!-- tutorial: skip -->\n```sh\necho\n```\n", "line 1: <!-- tutorial: skip --> without a reason"},
		{"skip with blanks only", "<!-- tutorial: skip    -->\n```sh\necho\n```\n", "line 1: <!-- tutorial: skip --> without a reason"},
		{"marker before text", "<!-- tutorial: env -->\nsome text\n```sh\necho\n```\n", "line 1: a tutorial marker not followed by a fence (line 2 is text)"},
		{"marker at the end", "text\n<!-- tutorial: skip later -->\n\n", "line 2: a tutorial marker not followed by a fence (the page ends)"},
		{"two markers", "<!-- tutorial: env -->\n<!-- tutorial: skip x -->\n```sh\necho\n```\n", "line 1: a tutorial marker not followed by a fence"},
		{"marker on yaml", "<!-- tutorial: skip x -->\n```yaml\na: b\n```\n", "line 1: the tutorial marker marks a yaml block, which is never run"},
		{"unknown marker", "<!-- tutorial: run-twice -->\n```sh\necho\n```\n", `line 1: unknown tutorial marker "run-twice"`},
		{"second env block", "<!-- tutorial: env -->\n```sh\nexport A=1\n```\n<!-- tutorial: env -->\n```sh\nexport B=1\n```\n", "line 6: a second env block (the first is at line 2)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.page))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestSession runs pages with real bash: exported variables and the
// working directory carry over, unexported ones do not; heredocs write
// files; a failing command stops its block and names its page line; a
// block that ends early is an error; skip blocks never run; env blocks are
// refused.
func TestSession(t *testing.T) {
	type step struct {
		block   string // the block's text, at the line given by line
		line    int
		lang    string // default sh
		skip    string
		env     bool
		wantOut string // a substring of the output
		wantErr string // a substring of the error; "" for none
		noOut   string // a substring the output must not have
	}
	tests := []struct {
		name  string
		steps []step
		check func(t *testing.T, dir string)
	}{
		{"variables and cd carry over", []step{
			{block: "export GREETING='hello world'\nLOCAL=only-here\nmkdir -p sub/dir\ncd sub\n", line: 10},
			{block: "echo \"$GREETING from $(basename \"$PWD\")\"\necho \"local=${LOCAL:-unset}\"\ncd dir\n", line: 20, wantOut: "hello world from sub\nlocal=unset\n"},
			{block: "pwd\nexport GREETING=changed\n", line: 30, wantOut: "/sub/dir\n"},
			{block: "echo \"$GREETING $FROM_ENV\"\nunset FROM_ENV\n", line: 40, wantOut: "changed session-env\n"},
			{block: "echo \"${FROM_ENV:-gone}\"\n", line: 50, wantOut: "gone\n"},
		}, nil},
		{"heredocs, quoted and expanded", []step{
			{block: "export NAME=spin\ncat > shim.yaml <<'EOF'\nname: $NAME\nEOF\ncat > expanded.yaml <<EOF\nname: $NAME\nEOF\n", line: 5},
			{block: "cat shim.yaml expanded.yaml\n", line: 12, wantOut: "name: $NAME\nname: spin\n"},
		}, func(t *testing.T, dir string) {
			if b, err := os.ReadFile(filepath.Join(dir, "expanded.yaml")); err != nil || string(b) != "name: spin\n" {
				t.Errorf("expanded.yaml: %q, %v", b, err)
			}
		}},
		{"a failure stops the block and names its line", []step{
			{block: "export KEPT=before\n", line: 3},
			{block: "echo first\nexport KEPT=lost\nfalse\necho never\n", line: 40, wantOut: "first\nmdrun: line 43: exit status 1: false\n", noOut: "never", wantErr: "block at line 40 (Section) failed: exit status 1"},
			{block: "echo \"$KEPT\"\n", line: 50, wantOut: "before\n"},
		}, nil},
		{"a failure in a pipeline and in a substitution", []step{
			{block: "echo one\nfalse | cat\necho never\n", line: 7, wantOut: "mdrun: line 9: exit status 1: ", noOut: "never", wantErr: "line 7"},
			{block: "X=$(exit 3)\necho never\n", line: 20, wantOut: "mdrun: line 21: exit status 3", noOut: "never", wantErr: "exit status 3"},
		}, nil},
		{"an unset variable fails", []step{
			{block: "echo \"$NOT_SET_ANYWHERE\"\necho never\n", line: 1, noOut: "never", wantOut: "mdrun: line 2: NOT_SET_ANYWHERE: unbound variable", wantErr: "failed"},
		}, nil},
		{"a heredoc left open", []step{
			{block: "cat > f <<EOF\nno end\n", line: 60, wantErr: "block at line 60 (Section) ended before its last line"},
		}, nil},
		{"an exit 0", []step{
			{block: "exit 0\n", line: 70, wantErr: "ended before its last line"},
		}, nil},
		{"skip and env blocks", []step{
			{block: "touch skipped\n", line: 1, skip: "needs a browser"},
			{block: "export A=1\n", line: 5, env: true, wantErr: "block at line 5 (Section) is the page's env block"},
			{block: "a: b\n", line: 9, lang: "yaml", wantErr: "block at line 9 (Section) is yaml, not sh"},
			{block: "ls\n", line: 12, noOut: "skipped"},
		}, func(t *testing.T, dir string) {
			if _, err := os.Stat(filepath.Join(dir, "skipped")); err == nil {
				t.Error("the skip block ran")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := NewSession(dir, []string{"PATH=" + os.Getenv("PATH"), "FROM_ENV=session-env"})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, st := range tt.steps {
				lang := st.lang
				if lang == "" {
					lang = "sh"
				}
				out, err := s.Run(ctx, Block{Section: "Section", Line: st.line, Lang: lang, Text: st.block, Skip: st.skip, Env: st.env})
				switch {
				case st.wantErr == "" && err != nil:
					t.Fatalf("block at line %d: %v\n%s", st.line, err, out)
				case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
					t.Fatalf("block at line %d: error %v, want one containing %q\n%s", st.line, err, st.wantErr, out)
				}
				if !strings.Contains(string(out), st.wantOut) {
					t.Errorf("block at line %d: output %q, want it to contain %q", st.line, out, st.wantOut)
				}
				if st.noOut != "" && strings.Contains(string(out), st.noOut) {
					t.Errorf("block at line %d: output %q contains %q", st.line, out, st.noOut)
				}
				if st.skip != "" && out != nil {
					t.Errorf("a skip block returned output %q", out)
				}
			}
			if tt.check != nil {
				tt.check(t, dir)
			}
		})
	}
}

// TestSessionCancel: when the context ends, the block and what it started
// are killed.
func TestSessionCancel(t *testing.T) {
	s := NewSession(t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Run(ctx, Block{Line: 1, Lang: "sh", Text: "sleep 30 | cat\n"})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("Run: %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run returned after %s", d)
	}
}
