package plan

import (
	"regexp"
	"testing"
)

// The expressions the name checks stand for (names.go), the oracle.
var (
	dnsLabelRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	runtimeTypeRE = regexp.MustCompile(`^io\.containerd\.[a-z0-9][a-z0-9_-]*\.v[0-9]+$`)
	unitRE        = regexp.MustCompile(`^[A-Za-z0-9:_.\\@-]+\.service$`)
	digestRE      = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// FuzzNames: each name check answers as its regular expression does.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "a", "-a", "a-", "a.b", "a..b", ".a", "a.", "Spin", "spin-v2",
		"io.containerd.spin.v2", "io.containerd.runc.v", "io.containerd..v2", "io.containerd.a.b.v1", "io.containerd.kata-qemu.v2", "io.containerd._x.v2",
		"containerd.service", ".service", "a@b:c\\d.e-f_g.service", "x.servic",
		"sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "sha256:" + "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "sha256:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []struct {
			name string
			re   *regexp.Regexp
			fn   func(string) bool
		}{
			{"isDNSLabel", dnsLabelRE, isDNSLabel},
			{"isDNSSubdomain", dnsSubdomRE, isDNSSubdomain},
			{"isRuntimeType", runtimeTypeRE, isRuntimeType},
			{"isUnit", unitRE, isUnit},
			{"isDigest", digestRE, isDigest},
		} {
			if got, want := c.fn(s), c.re.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, its expression says %v", c.name, s, got, want)
			}
		}
	})
}
