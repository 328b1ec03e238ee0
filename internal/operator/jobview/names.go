package jobview

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxLabelValue is the longest label value (and the longest Job name: a
// Job's name becomes its pods' job-name label).
const maxLabelValue = 63

// HashLen is how many hex digits of a SHA-256 shortened names keep: 40
// bits, so that two names that share their readable part collide with a
// chance of one in a trillion.
const HashLen = 10

// NameHash is the short hash of the parts of a name.
func NameHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])[:HashLen]
}

// LabelValue returns s as a label value: s itself when it fits (so the
// labels of Shims and nodes of ordinary names read as the names, and stay
// what earlier operators wrote), else a readable prefix of s and a hash of
// all of s. Shim and node names (DNS subdomains, up to 253 characters)
// only use characters label values allow, so only the length matters.
func LabelValue(s string) string {
	if len(s) <= maxLabelValue {
		return s
	}
	return Shorten(s, maxLabelValue-HashLen-1) + "-" + NameHash(s)
}

// Shorten returns at most n characters of s, dots made dashes, ending
// (and starting) with a letter or digit as names and label values must.
func Shorten(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.Trim(strings.ReplaceAll(s, ".", "-"), "-_")
}

// JobName is unique per shim, node, operation and spec hash, and at most
// 63 characters whatever the names' lengths: readable parts, shortened,
// then a hash of the whole ("shim-i-<shim>-<node>-<hash>").
func JobName(shim, node, op, hash string) string {
	verb := "i"
	switch op {
	case OpUninstall:
		verb = "u"
	case OpVerify:
		verb = "v"
	}
	return "shim-" + verb + "-" + Shorten(shim, 20) + "-" + Shorten(node, 20) + "-" + NameHash(shim, node, op, hash)
}
