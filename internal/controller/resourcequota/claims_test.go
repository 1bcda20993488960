package resourcequota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

func exact(class string, mode resourcev1.DeviceAllocationMode, count int64) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: "r", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: count}}
}

func sub(class string, mode resourcev1.DeviceAllocationMode, count int64) resourcev1.DeviceSubRequest {
	return resourcev1.DeviceSubRequest{Name: "s", DeviceClassName: class, AllocationMode: mode, Count: count}
}

func claimOf(reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}}}
}

// The cases of upstream's evaluator test (pkg/quota/v1/evaluator/core/resource_claims_test.go),
// as this package's own table.
func TestClaimUsage(t *testing.T) {
	const count = "count/resourceclaims.resource.k8s.io"
	const gpus = "gpu.deviceclass.resource.k8s.io/devices"
	const fpgas = "fpga.deviceclass.resource.k8s.io/devices"
	exactCount, all := resourcev1.DeviceAllocationModeExactCount, resourcev1.DeviceAllocationModeAll
	admin := exact("gpu", exactCount, 1)
	admin.Exactly.AdminAccess = new(bool)
	*admin.Exactly.AdminAccess = true

	tests := []struct {
		name  string
		claim *resourcev1.ResourceClaim
		want  corev1.ResourceList
	}{
		{"no requests: the object only", claimOf(), rl(count, "1")},
		{"one device", claimOf(exact("gpu", exactCount, 1)), rl(count, "1", gpus, "1")},
		{"a count", claimOf(exact("gpu", exactCount, 3)), rl(count, "1", gpus, "3")},
		{"requests of one class add up", claimOf(exact("gpu", exactCount, 2), exact("gpu", exactCount, 1)), rl(count, "1", gpus, "3")},
		{"classes apart", claimOf(exact("gpu", exactCount, 2), exact("fpga", exactCount, 1)), rl(count, "1", gpus, "2", fpgas, "1")},
		{"all: the most an allocation holds", claimOf(exact("gpu", all, 0)), rl(count, "1", gpus, "32")},
		{"an unknown mode is not charged", claimOf(exact("gpu", "Some", 4)), rl(count, "1", gpus, "0")},
		{"admin access is charged as any request", claimOf(admin), rl(count, "1", gpus, "1")},
		{
			"alternatives: the most any asks of each class",
			claimOf(resourcev1.DeviceRequest{Name: "r", FirstAvailable: []resourcev1.DeviceSubRequest{
				sub("gpu", exactCount, 2), sub("gpu", exactCount, 4), sub("fpga", exactCount, 1), sub("gpu", exactCount, 3),
			}}),
			rl(count, "1", gpus, "4", fpgas, "1"),
		},
		{
			"alternatives with all, added to an exact request",
			claimOf(
				resourcev1.DeviceRequest{Name: "a", FirstAvailable: []resourcev1.DeviceSubRequest{sub("gpu", exactCount, 1), sub("gpu", all, 0)}},
				exact("gpu", exactCount, 1),
			),
			rl(count, "1", gpus, "33"),
		},
		{
			"an alternative of an unknown mode is left out",
			claimOf(resourcev1.DeviceRequest{Name: "r", FirstAvailable: []resourcev1.DeviceSubRequest{sub("fpga", "Some", 2)}}),
			rl(count, "1"),
		},
		{"a request of an unknown kind is not charged", claimOf(resourcev1.DeviceRequest{Name: "r"}), rl(count, "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claimUsage(tt.claim); !quota.Equals(got, tt.want) {
				t.Errorf("claimUsage = %v, want %v", got, tt.want)
			}
		})
	}
}

// A scoped quota charges no claim: no scope applies to them.
func TestClaimsNoScope(t *testing.T) {
	claims := []*resourcev1.ResourceClaim{claimOf(exact("gpu", resourcev1.DeviceAllocationModeExactCount, 1))}
	names := []corev1.ResourceName{"gpu.deviceclass.resource.k8s.io/devices"}
	got, err := sumUsage(claims, nil, names, noScope[*resourcev1.ResourceClaim], claimUsage)
	if err != nil || !quota.Equals(got, rl(string(names[0]), "1")) {
		t.Errorf("unscoped: %v, %v", got, err)
	}
	scoped := []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeNotTerminating, Operator: corev1.ScopeSelectorOpExists}}
	got, err = sumUsage(claims, scoped, names, noScope[*resourcev1.ResourceClaim], claimUsage)
	if err != nil || !quota.Equals(got, rl(string(names[0]), "0")) {
		t.Errorf("scoped: %v, %v", got, err)
	}
}
