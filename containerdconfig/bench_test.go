package containerdconfig_test

import (
	"os"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
)

// BenchmarkAddRemove adds a handler to a 200-line containerd 2.2 config and
// removes it again (BENCHMARKS.md).
func BenchmarkAddRemove(b *testing.B) {
	data, err := os.ReadFile("testdata/bench/config-200.toml")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("add", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := containerdconfig.AddHandler("bench", data, spin); err != nil {
				b.Fatal(err)
			}
		}
	})
	added, _, err := containerdconfig.AddHandler("bench", data, spin)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("noop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, changed, err := containerdconfig.AddHandler("bench", added, spin); err != nil || changed {
				b.Fatal(err)
			}
		}
	})
	b.Run("remove", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := containerdconfig.RemoveHandler("bench", added, "spin"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
