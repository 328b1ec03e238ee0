package text

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 10, "a longe…"},
		{"ééééé", 7, "éé…"}, // 10 bytes; a cut at 4 would split no rune, at 5 one
		{"abc", 0, "…"},
	} {
		got := Truncate(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if len(tt.s) > tt.n && len(got) > max(tt.n, len("…")) {
			t.Errorf("Truncate(%q, %d) is %d bytes", tt.s, tt.n, len(got))
		}
	}
}
