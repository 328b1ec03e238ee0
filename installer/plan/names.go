package plan

import "strings"

// The plan's name checks. Each is what its comment's regular expression
// matches (FuzzNames checks them against it): a plan is validated once per
// node of a rollout, and these scans cost a tenth of the expressions.

// isDNSLabel: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
func isDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// isDNSSubdomain: DNS labels joined by dots,
// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
func isDNSSubdomain(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !isDNSLabel(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// isRuntimeType: ^io\.containerd\.[a-z0-9][a-z0-9_-]*\.v[0-9]+$
func isRuntimeType(s string) bool {
	name, ok := strings.CutPrefix(s, "io.containerd.")
	if !ok {
		return false
	}
	i := strings.LastIndex(name, ".v")
	if i <= 0 || i+2 == len(name) || !isLowerAlnum(name[0]) {
		return false
	}
	for j := 1; j < i; j++ {
		if c := name[j]; !isLowerAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	for j := i + 2; j < len(name); j++ {
		if name[j] < '0' || name[j] > '9' {
			return false
		}
	}
	return true
}

// isUnit: ^[A-Za-z0-9:_.\\@-]+\.service$
func isUnit(s string) bool {
	name, ok := strings.CutSuffix(s, ".service")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLowerAlnum(c) && (c < 'A' || c > 'Z') && !strings.ContainsRune(":_.\\@-", rune(c)) {
			return false
		}
	}
	return true
}

// isDigest: ^sha256:[a-f0-9]{64}$
func isDigest(s string) bool {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
