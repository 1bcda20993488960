package garbagecollector

import (
	"slices"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// DefaultDiscoveryPeriod is how often upstream looks for new resources to watch.
const DefaultDiscoveryPeriod = 30 * time.Second

// DefaultIgnoredResources are the resources upstream never watches (its GCIgnoredResources
// default): events, which are many, short-lived, and never own anything.
func DefaultIgnoredResources() map[schema.GroupResource]struct{} {
	return map[schema.GroupResource]struct{}{
		{Group: "", Resource: "events"}:                 {},
		{Group: eventsv1.GroupName, Resource: "events"}: {},
	}
}

// deletableResources are the preferred versions of the resources the collector works with:
// those supporting delete, list and watch, less the ignored ones, with their kinds.
func deletableResources(preferred []*metav1.APIResourceList, ignored map[schema.GroupResource]struct{}) map[schema.GroupVersionResource]schema.GroupVersionKind {
	out := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, preferred) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			gvr := gv.WithResource(r.Name)
			if _, skip := ignored[gvr.GroupResource()]; skip {
				continue
			}
			gvk := gv.WithKind(r.Kind)
			if r.Group != "" || r.Version != "" {
				gvk = schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
			}
			out[gvr] = gvk
		}
	}
	return out
}

// keepFailedGroups adds to found the watched resources of the groups discovery failed to
// list this time (a broken aggregated API must not cost their watches), as upstream keeps
// the synced ones.
func keepFailedGroups(found, watched map[schema.GroupVersionResource]schema.GroupVersionKind, failed map[schema.GroupVersion]error) {
	for gvr, gvk := range watched {
		if _, ok := failed[gvr.GroupVersion()]; ok {
			if _, present := found[gvr]; !present {
				found[gvr] = gvk
			}
		}
	}
}

// resourceChanges are the watches to add and to remove to go from watched to wanted, in a
// stable order.
func resourceChanges(watched, wanted map[schema.GroupVersionResource]schema.GroupVersionKind) (add, remove []schema.GroupVersionResource) {
	for gvr, gvk := range wanted {
		if cur, ok := watched[gvr]; !ok || cur != gvk {
			add = append(add, gvr)
		}
	}
	for gvr, gvk := range watched {
		if want, ok := wanted[gvr]; !ok || want != gvk {
			remove = append(remove, gvr)
		}
	}
	less := func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(add, less)
	slices.SortFunc(remove, less)
	return add, remove
}
