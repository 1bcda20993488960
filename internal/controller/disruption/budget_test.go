package disruption

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var now = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

func testPod(name string, ready bool, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: new(true)}}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func deleting(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: now}
	return p
}

// scales answers for the controllers it knows, by UID (= name in these tests).
func scales(known map[types.UID]int32, calls *int) scaleOfController {
	return func(_ context.Context, ref *metav1.OwnerReference, _ string) (types.UID, int32, bool, error) {
		if calls != nil {
			*calls++
		}
		if ref.UID == "broken" {
			return "", 0, false, errors.New("boom")
		}
		s, ok := known[ref.UID]
		return ref.UID, s, ok, nil
	}
}

func TestExpectedCounts(t *testing.T) {
	intOr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	threeOfRS := []*corev1.Pod{testPod("a", true, "rs"), testPod("b", true, "rs"), testPod("c", false, "rs")}
	known := map[types.UID]int32{"rs": 5, "rs2": 3}
	cases := []struct {
		name              string
		spec              policyv1.PodDisruptionBudgetSpec
		pods              []*corev1.Pod
		expected, desired int32
		unmanaged         []string
		err               string
		scaleCalls        int
	}{
		{name: "minAvailable int counts pods, no scale needed", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: intOr(intstr.FromInt32(2))},
			pods: threeOfRS, expected: 3, desired: 2},
		{name: "minAvailable int with unmanaged pods counts them too", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: intOr(intstr.FromInt32(1))},
			pods: []*corev1.Pod{testPod("a", true, ""), testPod("b", true, "")}, expected: 2, desired: 1},
		{name: "minAvailable percent of scale rounds up", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: intOr(intstr.FromString("50%"))},
			pods: threeOfRS, expected: 5, desired: 3, scaleCalls: 1},
		{name: "minAvailable 100%", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: intOr(intstr.FromString("100%"))},
			pods: threeOfRS, expected: 5, desired: 5, scaleCalls: 1},
		{name: "maxUnavailable int", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromInt32(2))},
			pods: threeOfRS, expected: 5, desired: 3, scaleCalls: 1},
		{name: "maxUnavailable percent rounds unavailable up", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromString("50%"))},
			pods: threeOfRS, expected: 5, desired: 2, scaleCalls: 1},
		{name: "maxUnavailable above scale floors desired at 0", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromInt32(9))},
			pods: threeOfRS, expected: 5, desired: 0, scaleCalls: 1},
		{name: "two controllers add up, unmanaged pods left out", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromString("25%"))},
			pods: append([]*corev1.Pod{testPod("d", true, "rs2"), testPod("x", true, "")}, threeOfRS...), expected: 8, desired: 6, unmanaged: []string{"x"}, scaleCalls: 2},
		{name: "no pods: expected 0", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromInt32(1))},
			expected: 0, desired: 0},
		{name: "controller without scale", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: intOr(intstr.FromString("10%"))},
			pods: []*corev1.Pod{testPod("a", true, "gone")}, err: `found no controllers for pod "a"`, scaleCalls: 1},
		{name: "finder error", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromInt32(1))},
			pods: []*corev1.Pod{testPod("a", true, "broken")}, err: "boom", scaleCalls: 1},
		{name: "malformed percent", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOr(intstr.FromString("x%"))},
			pods: threeOfRS, err: "invalid value for IntOrString: invalid value \"x%\": strconv.Atoi: parsing \"x\": invalid syntax", scaleCalls: 1},
		{name: "neither set", pods: threeOfRS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			expected, desired, unmanaged, err := expectedCounts(context.Background(), tc.spec, tc.pods, scales(known, &calls))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if expected != tc.expected || desired != tc.desired {
				t.Errorf("expected, desired = %d, %d; want %d, %d", expected, desired, tc.expected, tc.desired)
			}
			if len(unmanaged) != len(tc.unmanaged) || (len(unmanaged) > 0 && unmanaged[0] != tc.unmanaged[0]) {
				t.Errorf("unmanaged = %v, want %v", unmanaged, tc.unmanaged)
			}
			if calls != tc.scaleCalls {
				t.Errorf("scale looked up %d times, want %d (once per controller)", calls, tc.scaleCalls)
			}
		})
	}
}

func TestPrunedDisruptedPods(t *testing.T) {
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	pods := []*corev1.Pod{
		testPod("fresh", true, "rs"),
		testPod("older", true, "rs"),
		testPod("expired", true, "rs"),
		deleting(testPod("deleting", true, "rs")),
		testPod("unlisted", true, "rs"),
	}
	recorded := map[string]metav1.Time{
		"fresh":    at(10 * time.Second),
		"older":    at(90 * time.Second),
		"expired":  at(DeletionTimeout + time.Second),
		"deleting": at(time.Second),
		"gone":     at(time.Second), // no such pod any more
	}
	kept, expired, recheck := prunedDisruptedPods(pods, recorded, now)
	if len(kept) != 2 || kept["fresh"] != recorded["fresh"] || kept["older"] != recorded["older"] {
		t.Errorf("kept = %v, want fresh and older", kept)
	}
	if len(expired) != 1 || expired[0].Name != "expired" {
		t.Errorf("expired = %v, want [expired]", expired)
	}
	if want := now.Add(30 * time.Second); recheck == nil || !recheck.Equal(want) {
		t.Errorf("recheck = %v, want %v (older's expiry)", recheck, want)
	}

	kept, expired, recheck = prunedDisruptedPods(pods, nil, now)
	if kept == nil || len(kept) != 0 || expired != nil || recheck != nil {
		t.Errorf("nil map: kept=%v expired=%v recheck=%v", kept, expired, recheck)
	}
}

func TestCountHealthy(t *testing.T) {
	pods := []*corev1.Pod{
		testPod("ready", true, "rs"),
		testPod("unready", false, "rs"),
		deleting(testPod("deleting", true, "rs")),
		testPod("evicted", true, "rs"),
		testPod("evicted-long-ago", true, "rs"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-conditions"}},
	}
	disrupted := map[string]metav1.Time{
		"evicted":          metav1.NewTime(now.Add(-time.Minute)),
		"evicted-long-ago": metav1.NewTime(now.Add(-DeletionTimeout)),
	}
	if got := countHealthy(pods, disrupted, now); got != 2 {
		t.Errorf("countHealthy = %d, want 2 (ready and evicted-long-ago)", got)
	}
}

func TestDisruptionsAllowed(t *testing.T) {
	cases := []struct{ healthy, desired, expected, want int32 }{
		{3, 2, 3, 1},
		{3, 3, 3, 0},
		{2, 3, 3, 0},
		{4, 2, 6, 2},
		{3, 0, 0, 0}, // no pods expected yet: stay safe
		{1, 0, 1, 1},
	}
	for _, tc := range cases {
		if got := disruptionsAllowed(tc.healthy, tc.desired, tc.expected); got != tc.want {
			t.Errorf("disruptionsAllowed(%d, %d, %d) = %d, want %d", tc.healthy, tc.desired, tc.expected, got, tc.want)
		}
	}
}

func TestNewStatusCondition(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	s := newStatus(pdb, 3, 2, 3, map[string]metav1.Time{})
	c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
	if s.DisruptionsAllowed != 1 || s.ObservedGeneration != 4 || c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != policyv1.SufficientPodsReason || c.ObservedGeneration != 4 || c.LastTransitionTime.IsZero() {
		t.Fatalf("status = %+v", s)
	}

	// Failing keeps the counts, allows nothing, and says why.
	pdb.Status = s
	later := now.Add(time.Minute)
	f := failedStatus(pdb, errors.New("found no controllers for pod \"a\""), later)
	c = apimeta.FindStatusCondition(f.Conditions, policyv1.DisruptionAllowedCondition)
	if f.DisruptionsAllowed != 0 || f.CurrentHealthy != 3 || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason ||
		c.Message != `found no controllers for pod "a"` || !c.LastTransitionTime.Time.Equal(later) {
		t.Fatalf("failed status = %+v", f)
	}
	if apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition).Reason != policyv1.SufficientPodsReason {
		t.Fatal("failedStatus modified the budget it was given")
	}

	// Recovering: InsufficientPods, no message, transition time kept while status stays False.
	pdb.Status = f
	s = newStatus(pdb, 2, 2, 3, nil)
	c = apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
	if c.Reason != policyv1.InsufficientPodsReason || c.Message != "" || !c.LastTransitionTime.Time.Equal(later) {
		t.Fatalf("recovered condition = %+v", c)
	}
}

func TestStaleDisruption(t *testing.T) {
	withCond := func(status corev1.ConditionStatus, reason string, since time.Duration) *corev1.Pod {
		p := testPod("p", true, "rs")
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-since)),
		})
		return p
	}
	failed := withCond(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour)
	failed.Status.Phase = corev1.PodFailed
	cases := []struct {
		name  string
		pod   *corev1.Pod
		stale bool
		wait  time.Duration
	}{
		{"no condition", testPod("p", true, "rs"), false, 0},
		{"fresh eviction waits for the rest of the timeout", withCond(corev1.ConditionTrue, "EvictionByEvictionAPI", 30*time.Second), true, 90 * time.Second},
		{"old eviction is stale now", withCond(corev1.ConditionTrue, "EvictionByEvictionAPI", 3*time.Minute), true, 0},
		{"already False", withCond(corev1.ConditionFalse, "", time.Hour), false, 0},
		{"kubelet's condition never goes stale", withCond(corev1.ConditionTrue, corev1.PodReasonTerminationByKubelet, time.Hour), false, 0},
		{"being deleted", deleting(withCond(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour)), false, 0},
		{"finished", failed, false, 0},
	}
	for _, tc := range cases {
		stale, wait := staleDisruption(tc.pod, StalePodDisruptionTimeout, now)
		if stale != tc.stale || wait != tc.wait {
			t.Errorf("%s: stale, wait = %v, %v; want %v, %v", tc.name, stale, wait, tc.stale, tc.wait)
		}
	}

	p := withCond(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour)
	p.Generation = 3
	setDisruptionTargetFalse(p, now)
	c := disruptionTarget(p)
	if c.Status != corev1.ConditionFalse || c.Reason != "" || c.ObservedGeneration != 3 || !c.LastTransitionTime.Time.Equal(now) || len(p.Status.Conditions) != 2 {
		t.Errorf("cleared condition = %+v", c)
	}
}
