// Package text holds the string helpers the status and Event messages
// share: a message is cut to the API's bounds without splitting a rune.
package text

import "unicode/utf8"

// Truncate cuts s to at most n bytes at a rune boundary, ending with "…"
// when it cut (a cut inside a rune would put invalid UTF-8 into a status
// or an Event).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
