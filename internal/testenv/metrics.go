package testenv

import (
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Sample reads one series from the registry kcm's /metrics serves: a counter's or gauge's
// value, a histogram's sample count; labels must match exactly (nil: none). 0 when absent.
func Sample(name string, labels map[string]string) float64 {
	GinkgoHelper()
	return value(series(name, labels))
}

// value is a counter's or gauge's value, a histogram's sample count; 0 for nil.
func value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return 0
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// Histogram reads one histogram series from the registry kcm's /metrics serves, labels
// matching exactly (nil: none): its sample count and sum, and its buckets for a spec that
// checks upstream's. nil when absent (a histogram vector has no series before its first
// observation).
func Histogram(name string, labels map[string]string) *dto.Histogram {
	GinkgoHelper()
	return series(name, labels).GetHistogram()
}

// series finds the family's series whose labels are exactly labels; nil when absent.
func series(name string, labels map[string]string) *dto.Metric {
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
			return m
		}
	}
	return nil
}

// Family is one metric family as kcm's /metrics serves it: its type and every series.
type Family struct {
	Type   dto.MetricType
	Series []Series
}

// Series is one series of a family: its labels, its value as Sample reads it, and the
// histogram when the family is one.
type Series struct {
	Labels    map[string]string
	Value     float64
	Histogram *dto.Histogram
}

// ReadFamily reads the family named name from the registry kcm's /metrics serves; a Family
// without series when it has none or is not registered, for specs that read a family by
// one of its labels or tell an absent series from a zero one.
func ReadFamily(name string) Family {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		out := Family{Type: f.GetType()}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out.Series = append(out.Series, Series{Labels: labels, Value: value(m), Histogram: m.GetHistogram()})
		}
		return out
	}
	return Family{}
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
