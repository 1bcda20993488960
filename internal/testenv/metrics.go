package testenv

import (
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Sample reads one series from the registry kcm's /metrics serves: a counter's or gauge's
// value, a histogram's sample count; labels must match exactly (nil: none). 0 when absent.
func Sample(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// LabelNames are the sorted label names of the family's first series (nil: no series).
func LabelNames(name string) []string {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name || len(f.GetMetric()) == 0 {
			continue
		}
		var out []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			out = append(out, l.GetName())
		}
		sort.Strings(out)
		return out
	}
	return nil
}
