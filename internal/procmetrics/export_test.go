package procmetrics

import k8smetrics "k8s.io/component-base/metrics"

// LinkedFamilies are linked.go's hand-declared families, for the test that holds each
// against upstream's generated list.
func LinkedFamilies() []k8smetrics.Registerable { return linkedFamilies }
