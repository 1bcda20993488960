package resourcequota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/utils/ptr"
)

func class(name, extended string, created time.Time) resourcev1.DeviceClass {
	c := resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	if extended != "" {
		c.Spec.ExtendedResourceName = ptr.To(extended)
	}
	return c
}

func TestClaimsChargeExtended(t *testing.T) {
	classes := deviceClasses([]resourcev1.DeviceClass{
		class("gpu", "example.com/gpu", now),
		class("plain", "", now),
	})
	tests := []struct {
		name corev1.ResourceName
		want bool
	}{
		{"requests.example.com/gpu", true},
		{"requests.deviceclass.resource.kubernetes.io/gpu", true},
		// The implicit name of a class that names no extended resource: upstream's
		// lookup by resource name still finds the class.
		{"requests.deviceclass.resource.kubernetes.io/plain", true},
		{"requests.deviceclass.resource.kubernetes.io/none", false},
		{"requests.example.com/fpga", false},
		{"example.com/gpu", false},
		{"requests.cpu", false},
		{"gpu.deviceclass.resource.k8s.io/devices", false},
	}
	for _, tt := range tests {
		if got := claimsChargeExtended(tt.name, classes); got != tt.want {
			t.Errorf("claimsChargeExtended(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDeviceClassesNewestWins(t *testing.T) {
	classes := deviceClasses([]resourcev1.DeviceClass{
		class("new", "example.com/gpu", now),
		class("old", "example.com/gpu", now.Add(-time.Hour)),
	})
	if got := classes.GetDeviceClass("example.com/gpu"); got == nil || got.Name != "new" {
		t.Errorf("class of example.com/gpu = %v, want new", got)
	}
}

func TestClaimExtendedUsage(t *testing.T) {
	classes := deviceClasses([]resourcev1.DeviceClass{class("gpu", "example.com/gpu", now), class("plain", "", now)})
	tests := []struct {
		name    string
		devices corev1.ResourceList
		pod     corev1.ResourceList
		want    corev1.ResourceList
	}{
		{
			name:    "a class with an extended resource: both names",
			devices: rl("count/resourceclaims.resource.k8s.io", "1", "gpu.deviceclass.resource.k8s.io/devices", "2"),
			want:    rl("requests.deviceclass.resource.kubernetes.io/gpu", "2", "requests.example.com/gpu", "2"),
		},
		{
			name:    "a class without: its implicit name",
			devices: rl("plain.deviceclass.resource.k8s.io/devices", "1"),
			want:    rl("requests.deviceclass.resource.kubernetes.io/plain", "1"),
		},
		{
			name:    "less what the pod is charged",
			devices: rl("gpu.deviceclass.resource.k8s.io/devices", "3"),
			pod:     rl("requests.example.com/gpu", "2", "requests.cpu", "1"),
			want:    rl("requests.deviceclass.resource.kubernetes.io/gpu", "3", "requests.example.com/gpu", "1"),
		},
		{
			name:    "nothing when the pod is charged all",
			devices: rl("gpu.deviceclass.resource.k8s.io/devices", "1"),
			pod:     rl("requests.example.com/gpu", "1", "requests.deviceclass.resource.kubernetes.io/gpu", "4"),
			want:    rl(),
		},
		{name: "no devices", devices: rl("count/resourceclaims.resource.k8s.io", "1"), want: rl()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claimExtendedUsage(tt.devices, classes, tt.pod); !quota.Equals(got, tt.want) {
				t.Errorf("claimExtendedUsage = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodUsageOf(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container("a", rl("example.com/gpu", "1"), nil)}},
	}
	named := pod.DeepCopy()
	named.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "second"}
	claim := func(name string, created time.Time, owner *corev1.Pod, annotated bool) *resourcev1.ResourceClaim {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if owner != nil {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		}
		if annotated {
			c.Annotations = map[string]string{resourcev1.ExtendedResourceClaimAnnotation: "true"}
		}
		return c
	}
	first := claim("first", now, pod, true)
	second := claim("second", now.Add(time.Second), pod, true)
	sameTimeB := claim("b", now, pod, true)
	stranger := pod.DeepCopy()
	stranger.UID = "uid-other"
	tests := []struct {
		name   string
		pod    *corev1.Pod
		claims []*resourcev1.ResourceClaim
		claim  *resourcev1.ResourceClaim
		want   bool
	}{
		{"the pod's only claim", pod, []*resourcev1.ResourceClaim{first}, first, true},
		{"not annotated", pod, nil, claim("c", now, pod, false), false},
		{"no owner", pod, nil, claim("c", now, nil, true), false},
		{"owner gone", nil, []*resourcev1.ResourceClaim{first}, first, false},
		{"owner replaced (other UID)", stranger, []*resourcev1.ResourceClaim{first}, first, false},
		{"a later claim while the status names none", pod, []*resourcev1.ResourceClaim{first, second}, second, false},
		{"the first claim while the status names none", pod, []*resourcev1.ResourceClaim{first, second}, first, true},
		{"same time: the first name", pod, []*resourcev1.ResourceClaim{first, sameTimeB}, sameTimeB, true},
		{"same time: a later name", pod, []*resourcev1.ResourceClaim{first, sameTimeB}, first, false},
		{"the claim the status names", named, []*resourcev1.ResourceClaim{first, second}, second, true},
		{"a claim the status does not name", named, []*resourcev1.ResourceClaim{first, second}, first, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*corev1.Pod
			if tt.pod != nil {
				pods = []*corev1.Pod{tt.pod}
			}
			got := newClaimPods(pods, tt.claims).podUsageOf(tt.claim, now)
			if (got != nil) != tt.want {
				t.Fatalf("podUsageOf = %v, want the pod's usage: %v", got, tt.want)
			}
			if tt.want && !quota.Equals(quota.Mask(got, []corev1.ResourceName{"requests.example.com/gpu"}), rl("requests.example.com/gpu", "1")) {
				t.Errorf("podUsageOf = %v, want the pod's requests.example.com/gpu", got)
			}
		})
	}
}
