package daemonset

import (
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func dsWith(mutate func(*corev1.PodSpec)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "uid-1",
			Annotations: map[string]string{templateGenerationAnnotation: "3"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}},
	}
	if mutate != nil {
		mutate(&ds.Spec.Template.Spec)
	}
	return ds
}

func nodeWith(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func affinity(terms ...corev1.NodeSelectorTerm) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
}

func TestNodeEligibility(t *testing.T) {
	noSchedule := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}
	run, stay, neither := eligibility{true, true}, eligibility{false, true}, eligibility{}
	tests := []struct {
		name string
		node *corev1.Node
		spec func(*corev1.PodSpec)
		want eligibility
	}{
		{name: "plain node", node: nodeWith("n", nil), want: run},
		{name: "node selector matches", node: nodeWith("n", map[string]string{"disk": "ssd"}),
			spec: func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} }, want: run},
		{name: "node selector does not match", node: nodeWith("n", map[string]string{"disk": "hdd"}),
			spec: func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} }, want: neither},
		{name: "template nodeName elsewhere", node: nodeWith("n", nil),
			spec: func(s *corev1.PodSpec) { s.NodeName = "other" }, want: neither},
		{name: "affinity expression In", node: nodeWith("n", map[string]string{"zone": "a"}),
			spec: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}), want: run},
		{name: "affinity terms are ORed", node: nodeWith("n", map[string]string{"zone": "c"}),
			spec: affinity(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}},
			), want: run},
		{name: "affinity DoesNotExist fails", node: nodeWith("n", map[string]string{"zone": "c"}),
			spec: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpDoesNotExist}}}), want: neither},
		{name: "affinity Gt", node: nodeWith("n", map[string]string{"cores": "8"}),
			spec: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}}}), want: run},
		{name: "affinity matchFields metadata.name", node: nodeWith("n2", nil),
			spec: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}), want: neither},
		{name: "empty term matches nothing", node: nodeWith("n", nil), spec: affinity(corev1.NodeSelectorTerm{}), want: neither},
		{name: "untolerated NoSchedule: no new pod, existing stays", node: nodeWith("n", nil, noSchedule), want: stay},
		{name: "untolerated NoExecute: evicted", node: nodeWith("n", nil, noExecute), want: neither},
		{name: "tolerated NoExecute", node: nodeWith("n", nil, noExecute),
			spec: func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v"}}
			}, want: run},
		{name: "toleration with other value", node: nodeWith("n", nil, noSchedule),
			spec: func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "k", Value: "w", Effect: corev1.TaintEffectNoSchedule}}
			}, want: stay},
		{name: "PreferNoSchedule ignored", node: nodeWith("n", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}), want: run},
		{name: "default tolerations: unschedulable", node: nodeWith("n", nil, corev1.Taint{Key: taintUnschedulable, Effect: corev1.TaintEffectNoSchedule}), want: run},
		{name: "default tolerations: not-ready NoExecute", node: nodeWith("n", nil, corev1.Taint{Key: taintNotReady, Effect: corev1.TaintEffectNoExecute}), want: run},
		{name: "not-ready NoSchedule is not tolerated", node: nodeWith("n", nil, corev1.Taint{Key: taintNotReady, Effect: corev1.TaintEffectNoSchedule}), want: stay},
		{name: "network-unavailable only for host network", node: nodeWith("n", nil, corev1.Taint{Key: taintNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule}), want: stay},
		{name: "network-unavailable tolerated with host network", node: nodeWith("n", nil, corev1.Taint{Key: taintNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule}),
			spec: func(s *corev1.PodSpec) { s.HostNetwork = true }, want: run},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeEligibility(tt.node, dsWith(tt.spec), false); got != tt.want {
				t.Errorf("nodeEligibility = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Gt and Lt tolerations tolerate a taint only with TaintTolerationComparisonOperators, as
// upstream's daemon controller judges taints.
func TestNodeEligibilityComparisonOperators(t *testing.T) {
	run, stay, neither := eligibility{true, true}, eligibility{false, true}, eligibility{}
	taint := func(value string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: "tier", Value: value, Effect: effect}
	}
	tolerate := func(op corev1.TolerationOperator, value string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "tier", Operator: op, Value: value}}
		}
	}
	tests := []struct {
		name    string
		taint   corev1.Taint
		spec    func(*corev1.PodSpec)
		on, off eligibility
	}{
		{"Gt tolerates a greater NoSchedule value", taint("5", corev1.TaintEffectNoSchedule), tolerate(corev1.TolerationOpGt, "3"), run, stay},
		{"Gt tolerates a greater NoExecute value", taint("5", corev1.TaintEffectNoExecute), tolerate(corev1.TolerationOpGt, "3"), run, neither},
		{"Lt tolerates a smaller NoExecute value", taint("2", corev1.TaintEffectNoExecute), tolerate(corev1.TolerationOpLt, "3"), run, neither},
		{"Gt does not tolerate a smaller value", taint("2", corev1.TaintEffectNoExecute), tolerate(corev1.TolerationOpGt, "3"), neither, neither},
		{"Equal is not gated", taint("5", corev1.TaintEffectNoExecute), tolerate(corev1.TolerationOpEqual, "5"), run, run},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := nodeWith("n", nil, tt.taint)
			for gate, want := range map[bool]eligibility{true: tt.on, false: tt.off} {
				if got := nodeEligibility(node, dsWith(tt.spec), gate); got != want {
					t.Errorf("gate %v: nodeEligibility = %+v, want %+v", gate, got, want)
				}
			}
		})
	}
}

func TestDaemonTolerations(t *testing.T) {
	seconds := int64(30)
	spec := &corev1.PodSpec{Tolerations: []corev1.Toleration{
		{Key: "custom", Operator: corev1.TolerationOpExists},
		{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds},
	}}
	got := daemonTolerations(spec)
	if len(got) != 7 {
		t.Fatalf("got %d tolerations, want 7: %+v", len(got), got)
	}
	if got[0].Key != "custom" {
		t.Errorf("template toleration not kept first: %+v", got[0])
	}
	if got[1].Key != taintNotReady || got[1].TolerationSeconds != nil {
		t.Errorf("not-ready toleration not replaced by the one without seconds: %+v", got[1])
	}
	if spec.Tolerations[1].TolerationSeconds == nil {
		t.Errorf("template modified")
	}
	for _, key := range []string{taintUnreachable, taintDiskPressure, taintMemoryPressure, taintPIDPressure, taintUnschedulable} {
		if !slices.ContainsFunc(got, func(t corev1.Toleration) bool { return t.Key == key }) {
			t.Errorf("missing default toleration %s", key)
		}
	}
}

func TestNewPod(t *testing.T) {
	ds := dsWith(affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}))
	p := newPod(ds, "node-1", "abc")
	if got := targetNode(p); got != "node-1" {
		t.Errorf("targetNode = %q", got)
	}
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 {
		t.Errorf("terms not replaced: %+v", terms)
	}
	if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "abc" || p.Labels[templateGenerationLabel] != "3" || p.Labels["app"] != "agent" {
		t.Errorf("labels = %v", p.Labels)
	}
	if p.GenerateName != "agent-" || !metav1.IsControlledBy(p, ds) || p.Spec.NodeName != "" {
		t.Errorf("meta = %+v nodeName %q", p.ObjectMeta, p.Spec.NodeName)
	}
	if ds.Spec.Template.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "" || ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions == nil {
		t.Errorf("template modified")
	}
	if !isUpdated(p, "other", templateGeneration(ds)) || !isUpdated(p, "abc", nil) || isUpdated(p, "other", nil) {
		t.Errorf("isUpdated wrong")
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func mkPod(name, hash string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash},
		CreationTimestamp: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ready(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
}
func failed(p *corev1.Pod)    { p.Status.Phase = corev1.PodFailed }
func succeeded(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
func deleting(p *corev1.Pod)  { now := metav1.NewTime(t0); p.DeletionTimestamp = &now }
func age(s int) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(s) * time.Second)) }
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func TestPlanNode(t *testing.T) {
	run, stay, neither := eligibility{true, true}, eligibility{false, true}, eligibility{}
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		e          eligibility
		surge      bool
		wantCreate bool
		wantRemove []string
		wantFailed []string
		wantDone   []string
	}{
		{name: "eligible without pod", e: run, wantCreate: true},
		{name: "stay-only without pod", e: stay},
		{name: "one pod", e: run, pods: []*corev1.Pod{mkPod("a", "new")}},
		{name: "excess: keep the oldest", e: run, pods: []*corev1.Pod{mkPod("a", "new", age(1)), mkPod("b", "new", age(5)), mkPod("c", "old")},
			wantRemove: []string{"a", "c"}},
		{name: "surge: keep oldest new and oldest old", e: run, surge: true,
			pods:       []*corev1.Pod{mkPod("a", "new", age(1)), mkPod("b", "new", age(5)), mkPod("c", "old", age(9)), mkPod("d", "old")},
			wantRemove: []string{"a", "d"}},
		{name: "failed pod", e: run, pods: []*corev1.Pod{mkPod("a", "new", failed)}, wantFailed: []string{"a"}},
		{name: "succeeded pod: deleted, the new one once it is gone", e: run, pods: []*corev1.Pod{mkPod("a", "new", succeeded)}, wantDone: []string{"a"}},
		{name: "surge: succeeded pod replaced at once", e: run, surge: true, pods: []*corev1.Pod{mkPod("a", "new", succeeded)}, wantDone: []string{"a"}, wantCreate: true},
		{name: "surge: failed pod replaced at once", e: run, surge: true, pods: []*corev1.Pod{mkPod("a", "new", failed)}, wantFailed: []string{"a"}, wantCreate: true},
		{name: "surge: a running pod left, nothing created", e: run, surge: true, pods: []*corev1.Pod{mkPod("a", "new", succeeded), mkPod("b", "old")}, wantDone: []string{"a"}},
		{name: "surge, stay-only: not replaced", e: stay, surge: true, pods: []*corev1.Pod{mkPod("a", "new", succeeded)}, wantDone: []string{"a"}},
		{name: "deleting pods ignored, no new one yet", e: run, pods: []*corev1.Pod{mkPod("a", "new", deleting)}},
		{name: "node no longer fits", e: neither, pods: []*corev1.Pod{mkPod("a", "new"), mkPod("b", "old", deleting)}, wantRemove: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planNode(tt.pods, tt.e, tt.surge, "new", nil)
			if got.create != tt.wantCreate || !slices.Equal(names(got.remove), append([]string{}, tt.wantRemove...)) ||
				!slices.Equal(names(got.failed), append([]string{}, tt.wantFailed...)) ||
				!slices.Equal(names(got.succeeded), append([]string{}, tt.wantDone...)) {
				t.Errorf("planNode = create %v remove %v failed %v succeeded %v", got.create, names(got.remove), names(got.failed), names(got.succeeded))
			}
		})
	}
}

func TestRollingBudget(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
	tests := []struct {
		name               string
		ru                 *appsv1.RollingUpdateDaemonSet
		desired            int
		wantSurge, wantUnv int
	}{
		{name: "defaults", desired: 10, wantUnv: 1},
		{name: "percent rounds up", ru: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: pct("25%")}, desired: 10, wantUnv: 3},
		{name: "surge only", ru: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: num(0), MaxSurge: pct("10%")}, desired: 15, wantSurge: 2},
		{name: "both zero", ru: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: num(0), MaxSurge: num(0)}, desired: 5, wantUnv: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := dsWith(nil)
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: tt.ru}
			s, u := rollingBudget(ds, tt.desired)
			if s != tt.wantSurge || u != tt.wantUnv {
				t.Errorf("rollingBudget = %d, %d; want %d, %d", s, u, tt.wantSurge, tt.wantUnv)
			}
		})
	}
}

func TestRollingUpdate(t *testing.T) {
	run, neither := eligibility{true, true}, eligibility{}
	tests := []struct {
		name                string
		nodePods            map[string][]*corev1.Pod
		ineligible          []string
		maxSurge, maxUnavl  int
		wantRemove, wantNew []string
	}{
		{name: "no surge: one available old pod at a time",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("o1", "old", ready)}, "n2": {mkPod("o2", "old", ready)}, "n3": {mkPod("o3", "old", ready)}},
			maxUnavl: 1, wantRemove: []string{"o1"}},
		{name: "no surge: unavailable old pods always go, and use the budget",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("o1", "old")}, "n2": {mkPod("o2", "old", ready)}, "n3": {mkPod("o3", "old", ready)}},
			maxUnavl: 1, wantRemove: []string{"o1"}},
		{name: "no surge: an unready new pod uses the budget",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("x1", "new")}, "n2": {mkPod("o2", "old", ready)}, "n3": {mkPod("o3", "old", ready)}},
			maxUnavl: 1},
		{name: "no surge: budget of two",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("x1", "new", ready)}, "n2": {mkPod("o2", "old", ready)}, "n3": {mkPod("o3", "old", ready)}},
			maxUnavl: 2, wantRemove: []string{"o2", "o3"}},
		{name: "surge: create beside one old pod",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("o1", "old", ready)}, "n2": {mkPod("o2", "old", ready)}},
			maxSurge: 1, wantNew: []string{"n1"}},
		{name: "surge: wait while the new pod is not available",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("o1", "old", ready), mkPod("x1", "new")}, "n2": {mkPod("o2", "old", ready)}},
			maxSurge: 1},
		{name: "surge: delete the old pod once the new one is available, surge on",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("o1", "old", ready), mkPod("x1", "new", ready)}, "n2": {mkPod("o2", "old", ready)}},
			maxSurge: 1, wantRemove: []string{"o1"}, wantNew: []string{"n2"}},
		{name: "surge: unavailable old pods are replaced beyond the budget",
			nodePods: map[string][]*corev1.Pod{"n1": {mkPod("o1", "old")}, "n2": {mkPod("o2", "old")}, "n3": {mkPod("o3", "old", ready)}},
			maxSurge: 1, wantNew: []string{"n1", "n2", "n3"}},
		{name: "surge: unavailable old pod on an ineligible node is deleted",
			nodePods:   map[string][]*corev1.Pod{"n1": {mkPod("o1", "old")}},
			ineligible: []string{"n1"}, maxSurge: 1, wantRemove: []string{"o1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remove, create := rollingUpdate(rolloutInput{
				nodePods: tt.nodePods,
				eligible: func(n string) eligibility {
					if slices.Contains(tt.ineligible, n) {
						return neither
					}
					return run
				},
				hash: "new", now: t0, maxSurge: tt.maxSurge, maxUnavailable: tt.maxUnavl, desired: len(tt.nodePods),
			})
			sort.Strings(create)
			if !slices.Equal(names(remove), append([]string{}, tt.wantRemove...)) || !slices.Equal(append([]string{}, create...), append([]string{}, tt.wantNew...)) {
				t.Errorf("rollingUpdate = remove %v create %v; want %v %v", names(remove), create, tt.wantRemove, tt.wantNew)
			}
		})
	}
}

func TestCalculateStatus(t *testing.T) {
	ds := dsWith(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"run": "yes"} })
	ds.Generation = 4
	yes := map[string]string{"run": "yes"}
	nodes := []corev1.Node{*nodeWith("a", yes), *nodeWith("b", yes), *nodeWith("c", yes), *nodeWith("d", nil)}
	nodePods := map[string][]*corev1.Pod{
		"a": {mkPod("pa", "new", ready)},
		"b": {mkPod("pb", "old")},
		"d": {mkPod("pd", "new", ready)},
	}
	got := calculateStatus(ds, nodes, nodePods, "new", t0, false)
	want := appsv1.DaemonSetStatus{ObservedGeneration: 4, DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberMisscheduled: 1,
		NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1, NumberUnavailable: 2}
	if got.String() != want.String() {
		t.Errorf("status = %+v\nwant %+v", got, want)
	}
}
