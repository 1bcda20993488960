package daemonset

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// The well-known taints the default daemon pod tolerations name.
const (
	taintNotReady           = corev1.TaintNodeNotReady
	taintUnreachable        = corev1.TaintNodeUnreachable
	taintDiskPressure       = corev1.TaintNodeDiskPressure
	taintMemoryPressure     = corev1.TaintNodeMemoryPressure
	taintPIDPressure        = corev1.TaintNodePIDPressure
	taintUnschedulable      = corev1.TaintNodeUnschedulable
	taintNetworkUnavailable = corev1.TaintNodeNetworkUnavailable
)

// templateGenerationAnnotation is where the API server keeps the DaemonSet's template
// generation in apps/v1.
const templateGenerationAnnotation = "deprecated.daemonset.template.generation"

// templateGenerationLabel carries the template generation a daemon pod was made from.
const templateGenerationLabel = "pod-template-generation"

// eligibility is what a node means for a DaemonSet: whether a new daemon pod should be
// created there, and whether an existing one may keep running.
type eligibility struct {
	shouldRun, shouldContinueRunning bool
}

// nodeEligibility is upstream's NodeShouldRunDaemonPod: the template's nodeName, node
// selector and required node affinity must match the node; a taint the pod (with the default
// daemon tolerations) does not tolerate stops new pods, and evicts running ones only when its
// effect is NoExecute. comparisonOperators is upstream's TaintTolerationComparisonOperators
// gate: without it Gt and Lt tolerations tolerate nothing.
func nodeEligibility(node *corev1.Node, ds *appsv1.DaemonSet, comparisonOperators bool) eligibility {
	spec := &ds.Spec.Template.Spec
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return eligibility{}
	}
	// A parse error matches nothing; upstream ignores the error too.
	if fits, _ := nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity).Match(node); !fits {
		return eligibility{}
	}
	tolerations := daemonTolerations(spec)
	if !untolerated(node.Spec.Taints, tolerations, comparisonOperators, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute) {
		return eligibility{shouldRun: true, shouldContinueRunning: true}
	}
	return eligibility{shouldContinueRunning: !untolerated(node.Spec.Taints, tolerations, comparisonOperators, corev1.TaintEffectNoExecute)}
}

// untolerated reports whether a taint with one of effects is tolerated by none of tolerations.
func untolerated(taints []corev1.Taint, tolerations []corev1.Toleration, comparisonOperators bool, effects ...corev1.TaintEffect) bool {
	_, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations,
		func(t *corev1.Taint) bool { return slices.Contains(effects, t.Effect) }, comparisonOperators)
	return found
}

// defaultTolerations are upstream's AddOrUpdateDaemonPodTolerations: daemon pods stay on
// not-ready and unreachable nodes, and ignore the pressure, unschedulable and (host-network
// pods) network-unavailable NoSchedule taints.
func defaultTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	out := []corev1.Toleration{
		exists(taintNotReady, corev1.TaintEffectNoExecute),
		exists(taintUnreachable, corev1.TaintEffectNoExecute),
		exists(taintDiskPressure, corev1.TaintEffectNoSchedule),
		exists(taintMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(taintPIDPressure, corev1.TaintEffectNoSchedule),
		exists(taintUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if spec.HostNetwork {
		out = append(out, exists(taintNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return out
}

// daemonTolerations is the template's tolerations with the defaults added or updated: a
// template toleration with the same key, operator, value and effect is replaced (e.g. one
// with tolerationSeconds), as upstream's AddOrUpdateTolerationInPodSpec.
func daemonTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	out := slices.Clone(spec.Tolerations)
	for _, t := range defaultTolerations(spec) {
		i := slices.IndexFunc(out, func(o corev1.Toleration) bool {
			return o.Key == t.Key && o.Operator == t.Operator && o.Value == t.Value && o.Effect == t.Effect
		})
		switch {
		case i < 0:
			out = append(out, t)
		case !equality.Semantic.DeepEqual(out[i], t):
			out[i] = t
		}
	}
	return out
}

// templateGeneration reads the DaemonSet's template generation; nil when absent or invalid.
func templateGeneration(ds *appsv1.DaemonSet) *int64 {
	v, ok := ds.Annotations[templateGenerationAnnotation]
	if !ok {
		return nil
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &g
}

// newPod is the daemon pod for a node: the template with the default tolerations, the
// revision labels, and a required node affinity on metadata.name that pins it to the node
// for the scheduler. It is named after the DaemonSet and controlled by it.
func newPod(ds *appsv1.DaemonSet, nodeName, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	t.Spec.Tolerations = daemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if g := templateGeneration(ds); g != nil {
		t.Labels[templateGenerationLabel] = strconv.FormatInt(*g, 10)
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	t.Spec.Affinity = pinToNode(t.Spec.Affinity, nodeName)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ds.Namespace,
			GenerateName:    ds.Name + "-",
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))},
		},
		Spec: t.Spec,
	}
}

// pinToNode replaces the required node affinity terms with one matching only nodeName by
// metadata.name, as upstream's ReplaceDaemonSetPodNodeNameNodeAffinity: the controller has
// already checked the template's own terms against the node.
func pinToNode(a *corev1.Affinity, nodeName string) *corev1.Affinity {
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{
				Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
			}},
		}},
	}
	return a
}

// targetNode is the node a daemon pod is for: its spec.nodeName once bound, before that the
// node its metadata.name affinity names (upstream's GetTargetNodeName).
func targetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// isUpdated is upstream's IsPodUpdated: the pod carries the current revision hash or the
// current template generation.
func isUpdated(p *corev1.Pod, hash string, generation *int64) bool {
	if generation != nil && p.Labels[templateGenerationLabel] == strconv.FormatInt(*generation, 10) {
		return true
	}
	return hash != "" && p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}
