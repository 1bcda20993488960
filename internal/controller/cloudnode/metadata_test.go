package cloudnode

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"
)

// The provider's lookups against k8s.io/cloud-provider's fake: InstancesV2 first, else
// Instances (provider ID, then name) and Zones.
func TestInstanceMetadata(t *testing.T) {
	addresses := []corev1.NodeAddress{addr(corev1.NodeInternalIP, "10.0.0.1")}
	zone := cloudprovider.Zone{FailureDomain: "z1", Region: "r1"}
	node := func(providerID string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	for _, tc := range []struct {
		name    string
		cloud   *fake.Cloud
		node    *corev1.Node
		want    *cloudprovider.InstanceMetadata
		wantErr error
	}{
		{
			name: "InstancesV2's metadata",
			cloud: &fake.Cloud{EnableInstancesV2: true, ProviderID: map[types.NodeName]string{"n1": "fake://n1"},
				Addresses: addresses, Zone: zone, InstanceTypes: map[types.NodeName]string{"kubelet://n1": "big"}},
			node: node("kubelet://n1"),
			want: &cloudprovider.InstanceMetadata{ProviderID: "fake://n1", InstanceType: "big", NodeAddresses: addresses, Zone: "z1", Region: "r1"},
		},
		{
			name:  "InstancesV2 without a provider ID: the node's",
			cloud: &fake.Cloud{EnableInstancesV2: true, Addresses: addresses},
			node:  node("kubelet://n1"),
			want:  &cloudprovider.InstanceMetadata{ProviderID: "kubelet://n1", NodeAddresses: addresses},
		},
		{
			name:    "InstancesV2 without a provider ID, and the node has none: an error",
			cloud:   &fake.Cloud{EnableInstancesV2: true, Addresses: addresses},
			node:    node(""),
			wantErr: errors.New("cloud provider does not set node provider ID for node n1"),
		},
		{
			name:    "InstancesV2 cannot find the instance",
			cloud:   &fake.Cloud{EnableInstancesV2: true, MetadataErr: cloudprovider.InstanceNotFound},
			node:    node(""),
			wantErr: cloudprovider.InstanceNotFound,
		},
		{
			name: "Instances and Zones: the provider ID from the instance ID",
			cloud: &fake.Cloud{ExtID: map[types.NodeName]string{"n1": "i-1"}, Addresses: addresses, Zone: zone,
				InstanceTypes: map[types.NodeName]string{"fake://i-1": "big"}},
			node: node(""),
			want: &cloudprovider.InstanceMetadata{ProviderID: "fake://i-1", InstanceType: "big", NodeAddresses: addresses, Zone: "z1", Region: "r1"},
		},
		{
			name:  "Instances without Zones, the node's provider ID kept",
			cloud: &fake.Cloud{DisableZones: true, Addresses: addresses, Zone: zone},
			node:  node("kubelet://n1"),
			want:  &cloudprovider.InstanceMetadata{ProviderID: "kubelet://n1", NodeAddresses: addresses},
		},
		{
			name:  "Instances without provider IDs: found by name",
			cloud: &fake.Cloud{ExtIDErr: map[types.NodeName]error{"n1": cloudprovider.NotImplemented}, Addresses: addresses, DisableZones: true},
			node:  node(""),
			want:  &cloudprovider.InstanceMetadata{NodeAddresses: addresses},
		},
		{
			name:    "Instances failing to give the provider ID: an error, retried",
			cloud:   &fake.Cloud{ExtIDErr: map[types.NodeName]error{"n1": cloudprovider.InstanceNotFound}},
			node:    node(""),
			wantErr: cloudprovider.InstanceNotFound,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := instanceMetadata(context.Background(), tc.cloud, tc.node)
			if tc.wantErr != nil {
				if err == nil || (!errors.Is(err, tc.wantErr) && err.Error() != tc.wantErr.Error()) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInstanceAddresses(t *testing.T) {
	addresses := []corev1.NodeAddress{addr(corev1.NodeInternalIP, "10.0.0.1")}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "fake://n1"}}
	for _, c := range []*fake.Cloud{{EnableInstancesV2: true, Addresses: addresses}, {Addresses: addresses}} {
		got, err := instanceAddresses(context.Background(), c, n)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(addresses, got); diff != "" {
			t.Errorf("InstancesV2 %v: addresses (-want +got):\n%s", c.EnableInstancesV2, diff)
		}
	}
	c := &fake.Cloud{Err: errors.New("down")}
	if _, err := instanceAddresses(context.Background(), c, n); err == nil {
		t.Error("no error from a provider failing both lookups")
	}
	if diff := cmp.Diff([]string{"node-addresses-by-provider-id", "node-addresses"}, c.Calls); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
}
