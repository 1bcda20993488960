package endpointslice

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// trafficDistributionHints reports whether the Service's spec.trafficDistribution asks for
// hints: PreferClose and PreferSameZone (zone hints) and PreferSameNode (zone and node
// hints). The topology-mode annotation takes precedence over the field.
func trafficDistributionHints(svc *corev1.Service) bool {
	td := svc.Spec.TrafficDistribution
	if td == nil || topologyModeAuto(svc.Annotations) {
		return false
	}
	switch *td {
	case corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone,
		corev1.ServiceTrafficDistributionPreferSameNode:
		return true
	}
	return false
}

// topologyModeAuto reports whether topology-aware hints are on: the deprecated
// service.kubernetes.io/topology-aware-hints annotation, else service.kubernetes.io/topology-mode,
// set to Auto (or auto).
func topologyModeAuto(annotations map[string]string) bool {
	v, ok := annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	if !ok {
		v, ok = annotations[corev1.AnnotationTopologyMode]
	}
	return ok && (v == "Auto" || v == "auto")
}

// closeHints are the hints trafficDistribution wants for one endpoint: a ready endpoint is
// hinted for its own zone and, with nodes set, its own node; other endpoints keep whatever
// hints they have (ok false).
func closeHints(ep discoveryv1.Endpoint, nodes bool) (hints *discoveryv1.EndpointHints, ok bool) {
	if !endpointReady(ep) {
		return nil, false
	}
	var h discoveryv1.EndpointHints
	if ep.Zone != nil {
		h.ForZones = []discoveryv1.ForZone{{Name: *ep.Zone}}
	}
	if nodes && ep.NodeName != nil {
		h.ForNodes = []discoveryv1.ForNode{{Name: *ep.NodeName}}
	}
	if h.ForZones == nil && h.ForNodes == nil {
		return nil, true
	}
	return &h, true
}

// trafficDistributionUpdate is upstream's trafficdist.ReconcileHints: unchanged slices whose
// hints are not what trafficDistribution wants (td nil: no hints at all) move to update, and
// every slice written gets those hints.
func trafficDistributionUpdate(td *string, ch changes) changes {
	close := td != nil
	nodes := close && *td == corev1.ServiceTrafficDistributionPreferSameNode
	want := func(ep discoveryv1.Endpoint) (*discoveryv1.EndpointHints, bool) {
		if !close {
			return nil, true
		}
		return closeHints(ep, nodes)
	}
	var still []*discoveryv1.EndpointSlice
	for _, s := range ch.unchanged {
		if (!close && anyHints(s)) || (close && hintsDiffer(s, want)) {
			ch.update = append(ch.update, s.DeepCopy())
		} else {
			still = append(still, s)
		}
	}
	ch.unchanged = still
	for _, s := range append(append([]*discoveryv1.EndpointSlice{}, ch.create...), ch.update...) {
		for i := range s.Endpoints {
			if h, ok := want(s.Endpoints[i]); ok {
				s.Endpoints[i].Hints = h
			}
		}
	}
	return ch
}

// hintsDiffer reports whether any endpoint of the slice has hints other than wanted.
func hintsDiffer(s *discoveryv1.EndpointSlice, want func(discoveryv1.Endpoint) (*discoveryv1.EndpointHints, bool)) bool {
	for _, ep := range s.Endpoints {
		h, ok := want(ep)
		if !ok {
			continue
		}
		if h == nil && ep.Hints != nil && (len(ep.Hints.ForZones) > 0 || len(ep.Hints.ForNodes) > 0) {
			return true
		}
		if h != nil && !sameHints(ep.Hints, h) {
			return true
		}
	}
	return false
}

// sameHints compares the hints the controller writes: zones and nodes by name.
func sameHints(a, b *discoveryv1.EndpointHints) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.ForZones) != len(b.ForZones) || len(a.ForNodes) != len(b.ForNodes) {
		return false
	}
	for i := range a.ForZones {
		if a.ForZones[i].Name != b.ForZones[i].Name {
			return false
		}
	}
	for i := range a.ForNodes {
		if a.ForNodes[i].Name != b.ForNodes[i].Name {
			return false
		}
	}
	return true
}

// anyHints reports whether any endpoint of the slice carries hints.
func anyHints(s *discoveryv1.EndpointSlice) bool {
	for _, ep := range s.Endpoints {
		if ep.Hints != nil {
			return true
		}
	}
	return false
}

func endpointReady(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready != nil && *ep.Conditions.Ready
}
