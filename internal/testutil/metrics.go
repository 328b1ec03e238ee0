package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// HistogramSumCount returns the sum and count of the series of the
// histogram name whose labels include match; it fails the test when
// there is none.
func HistogramSumCount(t testing.TB, reg prometheus.Gatherer, name string, match map[string]string) (float64, uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue series
				}
			}
			return s.GetHistogram().GetSampleSum(), s.GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no series of %s with %v", name, match)
	return 0, 0
}
