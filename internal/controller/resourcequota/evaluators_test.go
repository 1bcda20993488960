package resourcequota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// sameResources fails the test unless got holds exactly want's resources with equal quantities.
func sameResources(t *testing.T, got, want corev1.ResourceList) {
	t.Helper()
	if !quota.Equals(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func TestTrackedResource(t *testing.T) {
	tests := []struct {
		name corev1.ResourceName
		want schema.GroupResource
		ok   bool
	}{
		{"pods", podsGR, true},
		{"count/pods", podsGR, true},
		{"cpu", podsGR, true},
		{"requests.memory", podsGR, true},
		{"limits.ephemeral-storage", podsGR, true},
		{"hugepages-2Mi", podsGR, true},
		{"requests.hugepages-1Gi", podsGR, true},
		{"requests.nvidia.com/gpu", podsGR, true},
		{"requests.deviceclass.resource.kubernetes.io/gpu", podsGR, true},
		{"services", servicesGR, true},
		{"count/services", servicesGR, true},
		{"services.nodeports", servicesGR, true},
		{"services.loadbalancers", servicesGR, true},
		{"persistentvolumeclaims", pvcsGR, true},
		{"count/persistentvolumeclaims", pvcsGR, true},
		{"requests.storage", pvcsGR, true},
		{"gold.storageclass.storage.k8s.io/requests.storage", pvcsGR, true},
		{"gold.storageclass.storage.k8s.io/persistentvolumeclaims", pvcsGR, true},
		{"configmaps", schema.GroupResource{Resource: "configmaps"}, true},
		{"count/configmaps", schema.GroupResource{Resource: "configmaps"}, true},
		{"secrets", schema.GroupResource{Resource: "secrets"}, true},
		{"replicationcontrollers", schema.GroupResource{Resource: "replicationcontrollers"}, true},
		{"resourcequotas", schema.GroupResource{Resource: "resourcequotas"}, true},
		{"count/resourceclaims.resource.k8s.io", claimsGR, true},
		{"gpu.example.com.deviceclass.resource.k8s.io/devices", claimsGR, true},
		{"count/deployments.apps", schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{"count/crontabs.stable.example.com", schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"}, true},
		{"count/events", schema.GroupResource{}, false},
		{"count/events.events.k8s.io", schema.GroupResource{}, false},
		{"count/", schema.GroupResource{}, false},
		{"requests.example", schema.GroupResource{}, false},
		{"example.com/widgets", schema.GroupResource{}, false},
	}
	for _, tt := range tests {
		got, ok := trackedResource(tt.name)
		if ok != tt.ok || got != tt.want {
			t.Errorf("trackedResource(%s) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPodCharged(t *testing.T) {
	deleting := func(ago time.Duration, grace int64) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			DeletionTimestamp:          ptr.To(metav1.NewTime(now.Add(-ago))),
			DeletionGracePeriodSeconds: ptr.To(grace),
		}}
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		charged bool
		until   time.Time
	}{
		{"running", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true, time.Time{}},
		{"pending", &corev1.Pod{}, true, time.Time{}},
		{"succeeded", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false, time.Time{}},
		{"failed", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, false, time.Time{}},
		// The deletion timestamp is already "now + grace" when the pod is deleted; the pod
		// is charged for another grace period after it.
		{"terminating within grace", deleting(10*time.Second, 30), true, now.Add(20 * time.Second)},
		{"terminating past grace", deleting(31*time.Second, 30), false, time.Time{}},
		{"terminating at the boundary", deleting(30*time.Second, 30), true, now},
		{"deletion timestamp without grace", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.NewTime(now.Add(-time.Hour)))}}, true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			charged, until := podCharged(tt.pod, now)
			if charged != tt.charged || !until.Equal(tt.until) {
				t.Errorf("got %v until %v, want %v until %v", charged, until, tt.charged, tt.until)
			}
		})
	}
}

func TestPodUsage(t *testing.T) {
	tests := []struct {
		name string
		pod  corev1.Pod
		want corev1.ResourceList
	}{
		{
			name: "best effort pod",
			pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}},
			want: rl("count/pods", "1", "pods", "1"),
		},
		{
			name: "containers summed, requests and limits",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a", rl("cpu", "100m", "memory", "64Mi", "ephemeral-storage", "1Gi"), rl("cpu", "200m", "memory", "128Mi")),
				container("b", rl("cpu", "250m"), rl("cpu", "500m", "ephemeral-storage", "2Gi")),
			}}},
			want: rl("count/pods", "1", "pods", "1",
				"cpu", "350m", "requests.cpu", "350m", "limits.cpu", "700m",
				"memory", "64Mi", "requests.memory", "64Mi", "limits.memory", "128Mi",
				"ephemeral-storage", "1Gi", "requests.ephemeral-storage", "1Gi", "limits.ephemeral-storage", "2Gi"),
		},
		{
			name: "overhead added to requests, and to limits that are set",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				Overhead:   rl("cpu", "50m", "memory", "10Mi"),
				Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "100m"))},
			}},
			want: rl("count/pods", "1", "pods", "1", "cpu", "150m", "requests.cpu", "150m", "limits.cpu", "150m",
				"memory", "10Mi", "requests.memory", "10Mi"),
		},
		{
			name: "pod-level resources override the containers'",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "2"), Limits: rl("cpu", "4")},
				Containers: []corev1.Container{container("a", rl("cpu", "100m", "memory", "1Gi"), nil)},
			}},
			want: rl("count/pods", "1", "pods", "1", "cpu", "2", "requests.cpu", "2", "limits.cpu", "4", "memory", "1Gi", "requests.memory", "1Gi"),
		},
		{
			name: "huge pages and extended resources",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a", rl("hugepages-2Mi", "4Mi", "example.com/gpu", "2"), rl("hugepages-2Mi", "4Mi", "example.com/gpu", "2")),
			}}},
			want: rl("count/pods", "1", "pods", "1", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi", "requests.example.com/gpu", "2"),
		},
		{
			name: "a resize counts the most of spec and what the kubelet allocated",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), nil)}},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
					Name: "a", AllocatedResources: rl("cpu", "300m"),
				}}},
			},
			want: rl("count/pods", "1", "pods", "1", "cpu", "300m", "requests.cpu", "300m"),
		},
		{
			name: "an infeasible resize counts what was allocated, not the spec",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "8"), nil)}},
				Status: corev1.PodStatus{
					Conditions:        []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "a", AllocatedResources: rl("cpu", "1")}},
				},
			},
			want: rl("count/pods", "1", "pods", "1", "cpu", "1", "requests.cpu", "1"),
		},
		{
			name: "a terminal pod is only an object",
			pod: corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded},
			},
			want: rl("count/pods", "1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameResources(t, podUsage(&tt.pod, now), tt.want)
		})
	}
}

func TestPodMatchesScope(t *testing.T) {
	bestEffortPod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	burstable := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), nil)}}}
	onlyStorage := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("ephemeral-storage", "1Gi"), nil)}}}
	podLevel := &corev1.Pod{Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: rl("memory", "1Gi")}, Containers: []corev1.Container{{Name: "a"}}}}
	qosFromStatus := &corev1.Pod{Spec: burstable.Spec, Status: corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort}}
	deadline := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](60)}}
	high := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high"}}
	low := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "low"}}
	none := &corev1.Pod{}
	cross := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{PodAffinityTerm: corev1.PodAffinityTerm{NamespaceSelector: &metav1.LabelSelector{}}}},
	}}}}

	scope := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	tests := []struct {
		name    string
		sel     corev1.ScopedResourceSelectorRequirement
		pod     *corev1.Pod
		want    bool
		wantErr bool
	}{
		{"BestEffort: no requests", scope(corev1.ResourceQuotaScopeBestEffort), bestEffortPod, true, false},
		{"BestEffort: a cpu request", scope(corev1.ResourceQuotaScopeBestEffort), burstable, false, false},
		{"BestEffort: storage only", scope(corev1.ResourceQuotaScopeBestEffort), onlyStorage, true, false},
		{"BestEffort: pod-level memory", scope(corev1.ResourceQuotaScopeBestEffort), podLevel, false, false},
		{"BestEffort: status QoS class wins", scope(corev1.ResourceQuotaScopeBestEffort), qosFromStatus, true, false},
		{"NotBestEffort", scope(corev1.ResourceQuotaScopeNotBestEffort), burstable, true, false},
		{"NotBestEffort: best effort pod", scope(corev1.ResourceQuotaScopeNotBestEffort), bestEffortPod, false, false},
		{"Terminating: active deadline", scope(corev1.ResourceQuotaScopeTerminating), deadline, true, false},
		{"Terminating: none", scope(corev1.ResourceQuotaScopeTerminating), none, false, false},
		{"NotTerminating", scope(corev1.ResourceQuotaScopeNotTerminating), none, true, false},
		{"NotTerminating: active deadline", scope(corev1.ResourceQuotaScopeNotTerminating), deadline, false, false},
		{"PriorityClass In", priority(corev1.ScopeSelectorOpIn, "high", "mid"), high, true, false},
		{"PriorityClass In, other class", priority(corev1.ScopeSelectorOpIn, "high"), low, false, false},
		{"PriorityClass In, no class", priority(corev1.ScopeSelectorOpIn, "high"), none, false, false},
		{"PriorityClass NotIn", priority(corev1.ScopeSelectorOpNotIn, "high"), low, true, false},
		{"PriorityClass NotIn, listed", priority(corev1.ScopeSelectorOpNotIn, "high"), high, false, false},
		{"PriorityClass NotIn, no class", priority(corev1.ScopeSelectorOpNotIn, "high"), none, true, false},
		{"PriorityClass Exists", priority(corev1.ScopeSelectorOpExists), low, true, false},
		{"PriorityClass Exists, no class", priority(corev1.ScopeSelectorOpExists), none, false, false},
		{"PriorityClass DoesNotExist", priority(corev1.ScopeSelectorOpDoesNotExist), none, true, false},
		{"PriorityClass DoesNotExist, class", priority(corev1.ScopeSelectorOpDoesNotExist), high, false, false},
		{"PriorityClass bad operator", priority("Near", "high"), high, false, true},
		{"PriorityClass In without values", priority(corev1.ScopeSelectorOpIn), high, false, true},
		{"CrossNamespacePodAffinity", scope(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), cross, true, false},
		{"CrossNamespacePodAffinity: none", scope(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), none, false, false},
		{"VolumeAttributesClass does not apply to pods", scope(corev1.ResourceQuotaScopeVolumeAttributesClass), none, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podMatchesScope(tt.sel, tt.pod)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestServiceUsage(t *testing.T) {
	ports := []corev1.ServicePort{{Port: 80}, {Port: 443, NodePort: 30443}}
	tests := []struct {
		name string
		svc  corev1.ServiceSpec
		want corev1.ResourceList
	}{
		{"ClusterIP", corev1.ServiceSpec{Ports: ports}, rl("count/services", "1", "services", "1", "services.nodeports", "0", "services.loadbalancers", "0")},
		{"NodePort", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports}, rl("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "0")},
		{"LoadBalancer", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports}, rl("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "1")},
		{"LoadBalancer without node ports", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports, AllocateLoadBalancerNodePorts: ptr.To(false)},
			rl("count/services", "1", "services", "1", "services.nodeports", "1", "services.loadbalancers", "1")},
		{"ExternalName", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}, rl("count/services", "1", "services", "1", "services.nodeports", "0", "services.loadbalancers", "0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameResources(t, serviceUsage(&corev1.Service{Spec: tt.svc}), tt.want)
		})
	}
}

func TestPVCUsage(t *testing.T) {
	claim := func(class *string, request string, allocated string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}
		if request != "" {
			pvc.Spec.Resources.Requests = rl("storage", request)
		}
		if allocated != "" {
			pvc.Status.AllocatedResources = rl("storage", allocated)
		}
		return pvc
	}
	annotated := claim(ptr.To("gold"), "1Gi", "")
	annotated.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "silver"}
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want corev1.ResourceList
	}{
		{"no class", claim(nil, "1Gi", ""), rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi")},
		{"with class", claim(ptr.To("gold"), "1Gi", ""), rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi",
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi")},
		{"beta annotation wins", annotated, rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi",
			"silver.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "silver.storageclass.storage.k8s.io/requests.storage", "1Gi")},
		{"fractional request rounded up", claim(nil, "1500m", ""), rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "2")},
		{"more allocated by an expansion", claim(nil, "1Gi", "2Gi"), rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "2Gi")},
		{"less allocated than asked", claim(nil, "2Gi", "1Gi"), rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "2Gi")},
		{"no request", claim(nil, "", ""), rl("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameResources(t, pvcUsage(tt.pvc), tt.want)
		})
	}
}

func TestPVCMatchesScope(t *testing.T) {
	fast := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeAttributesClassName: ptr.To("fast")}}
	moving := &corev1.PersistentVolumeClaim{
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeAttributesClassName: ptr.To("fast")},
		Status: corev1.PersistentVolumeClaimStatus{CurrentVolumeAttributesClassName: ptr.To("slow")},
	}
	plain := &corev1.PersistentVolumeClaim{}
	vac := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: op, Values: values}
	}
	tests := []struct {
		name string
		sel  corev1.ScopedResourceSelectorRequirement
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"Exists", vac(corev1.ScopeSelectorOpExists), fast, true},
		{"Exists, none", vac(corev1.ScopeSelectorOpExists), plain, false},
		{"In", vac(corev1.ScopeSelectorOpIn, "fast"), fast, true},
		{"In, current class during a modification", vac(corev1.ScopeSelectorOpIn, "slow"), moving, true},
		{"In, none", vac(corev1.ScopeSelectorOpIn, "fast"), plain, false},
		{"NotIn, none", vac(corev1.ScopeSelectorOpNotIn, "fast"), plain, true},
		{"NotIn", vac(corev1.ScopeSelectorOpNotIn, "fast"), fast, false},
		{"DoesNotExist, none", vac(corev1.ScopeSelectorOpDoesNotExist), plain, true},
		{"other scopes do not apply to claims", corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpExists}, plain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pvcMatchesScope(tt.sel, tt.pvc)
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestUpdateFilters(t *testing.T) {
	base := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	done := base.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	withDeadline := base.DeepCopy()
	withDeadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	relabelled := base.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	resized := base.DeepCopy()
	resized.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", Resources: &corev1.ResourceRequirements{Requests: rl("cpu", "2")}}}
	deleting := base.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(30 * time.Second)))
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](30)
	withStatus := base.DeepCopy()
	withStatus.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", Resources: &corev1.ResourceRequirements{Requests: rl("cpu", "1")}}}
	for _, tt := range []struct {
		name     string
		old, cur *corev1.Pod
		want     bool
	}{
		{"terminal", base, done, true},
		{"back from terminal is not a release", done, base, false},
		{"terminating scope", base, withDeadline, true},
		{"labels", base, relabelled, false},
		{"resized", withStatus, resized, true},
		{"graceful deletion starts", base, deleting, true},
		{"graceful deletion goes on", deleting, deleting.DeepCopy(), false},
	} {
		if got := podUpdateMatters(tt.old, tt.cur, now); got != tt.want {
			t.Errorf("pod %s: got %v, want %v", tt.name, got, tt.want)
		}
	}

	svc := &corev1.Service{}
	np := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}}
	ext := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}
	if !serviceUpdateMatters(svc, np) || serviceUpdateMatters(svc, ext) {
		t.Error("service: only a change to or from NodePort/LoadBalancer matters")
	}

	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "1Gi")}}}
	expanded := pvc.DeepCopy()
	expanded.Status.AllocatedResources = rl("storage", "2Gi")
	same := expanded.DeepCopy()
	same.Status.AllocatedResources = rl("storage", "2048Mi")
	modified := pvc.DeepCopy()
	modified.Spec.VolumeAttributesClassName = ptr.To("fast")
	if !pvcUpdateMatters(pvc, expanded) || pvcUpdateMatters(expanded, same) || !pvcUpdateMatters(pvc, modified) || pvcUpdateMatters(pvc, pvc.DeepCopy()) {
		t.Error("pvc: allocated storage and volume attributes classes matter, nothing else")
	}
}
