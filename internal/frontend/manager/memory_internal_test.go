package manager

import "testing"

// TestMemoryLimit: auto is 90% of the cgroup's limit unless GOMEMLIMIT is
// set; a quantity is taken as is; 0 is none.
func TestMemoryLimit(t *testing.T) {
	cg := func(n int64) func() int64 { return func() int64 { return n } }
	for _, c := range []struct {
		flag, env string
		cgroup    int64
		want      int64
		err       bool
	}{
		{"auto", "", 256 << 20, 256 << 20 / 10 * 9, false},
		{"auto", "", 0, 0, false},
		{"auto", "100MiB", 256 << 20, 0, false},
		{"0", "", 256 << 20, 0, false},
		{"230Mi", "", 0, 230 << 20, false},
		{"230Mi", "100MiB", 0, 230 << 20, false},
		{"-1", "", 0, 0, true},
		{"lots", "", 0, 0, true},
	} {
		got, err := memoryLimit(c.flag, c.env, cg(c.cgroup))
		if got != c.want || (err != nil) != c.err {
			t.Errorf("memoryLimit(%q, GOMEMLIMIT=%q, cgroup %d) = %d, %v; want %d (error: %v)", c.flag, c.env, c.cgroup, got, err, c.want, c.err)
		}
	}
}
