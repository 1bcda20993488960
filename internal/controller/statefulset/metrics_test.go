package statefulset_test

import (
	"maps"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcm/kcm/internal/testenv"
)

// gauge reads, from the registry kcm's /metrics serves, the gauge family's series with
// exactly those label names and values (-1 when there is none).
func gauge(g Gomega, family string, labels map[string]string) float64 {
	f := testenv.ReadFamily(family)
	for _, s := range f.Series {
		g.Expect(f.Type).To(Equal(dto.MetricType_GAUGE), family)
		if maps.Equal(s.Labels, labels) {
			return s.Value
		}
	}
	return -1
}
