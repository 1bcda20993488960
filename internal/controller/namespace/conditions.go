package namespace

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// conditionTypes are the namespace conditions the controller owns, in upstream's order.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// The reasons and messages of the conditions when nothing is wrong (status False), as upstream
// writes them.
var (
	okReasons = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
		corev1.NamespaceContentRemaining:         "ContentRemoved",
		corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	okMessages = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "All content successfully removed",
		corev1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
)

// observation is what one deletion pass learnt: the failures and what is left.
type observation struct {
	discoveryErr    error
	groupVersionErr error
	contentErrs     []error
	// remaining counts the objects left per resource; finalizers counts, per finalizer, the
	// objects it holds.
	remaining  map[schema.GroupVersionResource]int
	finalizers map[string]int
}

func newObservation() *observation {
	return &observation{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
}

// add records what deleting one resource left behind.
func (o *observation) add(gvr schema.GroupVersionResource, res resourceResult) {
	if res.remaining == 0 {
		return
	}
	o.remaining[gvr] = res.remaining
	for f, n := range res.finalizers {
		if n > 0 {
			o.finalizers[f] += n
		}
	}
}

// failing returns the conditions of the problems observed, with status True; a type with
// no problem is absent.
func (o *observation) failing() map[corev1.NamespaceConditionType]corev1.NamespaceCondition {
	out := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	set := func(t corev1.NamespaceConditionType, reason, msg string) {
		out[t] = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
	}
	if o.discoveryErr != nil {
		msg := o.discoveryErr.Error()
		var derr *discovery.ErrGroupDiscoveryFailed
		if errors.As(o.discoveryErr, &derr) {
			msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(derr.Groups), o.discoveryErr)
		}
		set(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
	}
	if o.groupVersionErr != nil {
		set(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", o.groupVersionErr.Error())
	}
	if len(o.contentErrs) > 0 {
		msgs := make([]string, 0, len(o.contentErrs))
		for _, e := range o.contentErrs {
			msgs = append(msgs, e.Error())
		}
		sort.Strings(msgs)
		set(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(o.contentErrs), strings.Join(msgs, ", ")))
	}
	if len(o.remaining) > 0 {
		var parts []string
		for gvr, n := range o.remaining {
			parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		sort.Strings(parts)
		set(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			"Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(o.finalizers) > 0 {
		var parts []string
		for f, n := range o.finalizers {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(parts)
		set(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+strings.Join(parts, ", "))
	}
	return out
}

// applyConditions writes the five deletion conditions into status: the failing ones as
// given, the others in their "all is well" form. A condition keeps its transition time
// unless its status changes. It reports whether status changed.
func applyConditions(status *corev1.NamespaceStatus, failing map[corev1.NamespaceConditionType]corev1.NamespaceCondition, now metav1.Time) bool {
	changed := false
	for _, t := range conditionTypes {
		want, ok := failing[t]
		if !ok {
			want = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReasons[t], Message: okMessages[t]}
		}
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == t })
		if i < 0 {
			want.LastTransitionTime = now
			status.Conditions = append(status.Conditions, want)
			changed = true
			continue
		}
		have := &status.Conditions[i]
		if have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue
		}
		if have.Status != want.Status {
			have.LastTransitionTime = now
		}
		have.Status, have.Reason, have.Message = want.Status, want.Reason, want.Message
		changed = true
	}
	return changed
}

// verbs are the verbs discovery lists for a resource.
type verbs map[string]bool

// deletableResources returns the resources discovery says can be deleted, with their
// verbs. A group version that does not parse is skipped and reported.
func deletableResources(lists []*metav1.APIResourceList) (map[schema.GroupVersionResource]verbs, error) {
	out := map[schema.GroupVersionResource]verbs{}
	var errs []error
	for _, rl := range lists {
		if rl == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range rl.APIResources {
			v := verbs{}
			for _, verb := range r.Verbs {
				v[verb] = true
			}
			if !v["delete"] {
				continue
			}
			out[gv.WithResource(r.Name)] = v
		}
	}
	return out, errors.Join(errs...)
}

// podGraceEstimate is how long, in seconds, the namespace's pods may still take to
// terminate: the longest grace period of the pods not yet terminal, or 0 once that much time
// has passed since the namespace was deleted.
func podGraceEstimate(pods []corev1.Pod, namespaceDeletedAt, now time.Time) int64 {
	var estimate int64
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > estimate {
			estimate = *g
		}
	}
	if now.Sub(namespaceDeletedAt) >= time.Duration(estimate)*time.Second {
		return 0
	}
	return estimate
}

// waitForContent is how long upstream waits before looking again at a namespace whose
// content is expected to take estimate seconds to go.
func waitForContent(estimate int64) time.Duration {
	return time.Duration(estimate/2+1) * time.Second
}

// withoutFinalizer returns the namespace's spec finalizers without token, sorted and
// without duplicates, as upstream sends them to the finalize subresource.
func withoutFinalizer(finalizers []corev1.FinalizerName, token corev1.FinalizerName) []corev1.FinalizerName {
	out := make([]corev1.FinalizerName, 0, len(finalizers))
	for _, f := range finalizers {
		if f != token {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// graceRemaining is how much of the deletion grace period is left: upstream processes a
// deleted namespace only deletionGracePeriod after its deletion, so that every API server
// of an HA control plane refuses new content in it, and late creations reach every etcd
// member, before content is listed.
func graceRemaining(deletedAt, now time.Time) time.Duration {
	left := deletedAt.Add(deletionGracePeriod).Sub(now)
	return min(max(left, 0), deletionGracePeriod)
}
