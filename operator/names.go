package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxLabelValue is the longest label value (and the longest Job name: a
// Job's name becomes its pods' job-name label).
const maxLabelValue = 63

// hashLen is how many hex digits of a SHA-256 shortened names keep: 40
// bits, so that two names that share their readable part collide with a
// chance of one in a trillion.
const hashLen = 10

// nameHash is the short hash of the parts of a name.
func nameHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// labelValue returns s as a label value: s itself when it fits (so the
// labels of Shims and nodes of ordinary names read as the names, and stay
// what earlier operators wrote), else a readable prefix of s and a hash of
// all of s. Shim and node names (DNS subdomains, up to 253 characters)
// only use characters label values allow, so only the length matters.
func labelValue(s string) string {
	if len(s) <= maxLabelValue {
		return s
	}
	return shorten(s, maxLabelValue-hashLen-1) + "-" + nameHash(s)
}

// shorten returns at most n characters of s, dots made dashes, ending
// (and starting) with a letter or digit as names and label values must.
func shorten(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.Trim(strings.ReplaceAll(s, ".", "-"), "-_")
}

// jobName is unique per shim, node, operation and spec hash, and at most
// 63 characters whatever the names' lengths: readable parts, shortened,
// then a hash of the whole ("shim-i-<shim>-<node>-<hash>").
func jobName(shim, node, op, hash string) string {
	verb := "i"
	switch op {
	case opUninstall:
		verb = "u"
	case opVerify:
		verb = "v"
	}
	return "shim-" + verb + "-" + shorten(shim, 20) + "-" + shorten(node, 20) + "-" + nameHash(shim, node, op, hash)
}
