package endpointslicemirroring

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAddressToEndpoint(t *testing.T) {
	tests := []struct {
		ip       string
		wantOK   bool
		wantType discoveryv1.AddressType
		wantAddr string
	}{
		{ip: "10.0.0.1", wantOK: true, wantType: discoveryv1.AddressTypeIPv4, wantAddr: "10.0.0.1"},
		{ip: "010.000.000.001", wantOK: true, wantType: discoveryv1.AddressTypeIPv4, wantAddr: "10.0.0.1"},
		{ip: "fd00::0001", wantOK: true, wantType: discoveryv1.AddressTypeIPv6, wantAddr: "fd00::1"},
		{ip: "::ffff:10.0.0.1", wantOK: true, wantType: discoveryv1.AddressTypeIPv4, wantAddr: "10.0.0.1"},
		{ip: "not-an-ip"},
		{ip: ""},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			e, typ, ok := AddressToEndpoint(corev1.EndpointAddress{IP: tt.ip, Hostname: "h", NodeName: ptr.To("n")}, false)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if typ != tt.wantType || e.Addresses[0] != tt.wantAddr {
				t.Errorf("got %s %v, want %s %s", typ, e.Addresses, tt.wantType, tt.wantAddr)
			}
			if *e.Conditions.Ready || *e.Hostname != "h" || *e.NodeName != "n" {
				t.Errorf("conditions/hostname/nodeName not carried: %+v", e)
			}
		})
	}
}

func TestSlicePrefix(t *testing.T) {
	if got := SlicePrefix("svc"); got != "svc-" {
		t.Errorf("SlicePrefix(svc) = %q", got)
	}
	long := strings.Repeat("a", 253)
	if got := SlicePrefix(long); got != long {
		t.Errorf("a name with no room for the dash keeps no dash, got %q", got)
	}
}

func endpointsWith(subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "ep-uid",
			Labels:      map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "x", corev1.EndpointsLastChangeTriggerTime: "t", corev1.LastAppliedConfigAnnotation: "{}"}},
		Subsets: subsets,
	}
}

func ips(list ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range list {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

var http = []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}

// existingFrom stores a plan's creations as the API server would, named slice-N.
func existingFrom(plan Plan) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i, s := range plan.Create {
		c := s.DeepCopy()
		c.Name, c.GenerateName = fmt.Sprintf("slice-%d", i), ""
		out = append(out, c)
	}
	return out
}

func TestPlanSlices(t *testing.T) {
	t.Run("dual-stack subset: one slice per address type, labels and annotations mirrored", func(t *testing.T) {
		ep := endpointsWith(corev1.EndpointSubset{Addresses: ips("10.0.0.1", "fd00::1"), NotReadyAddresses: ips("10.0.0.2"), Ports: http})
		plan := PlanSlices(ep, nil, 1000)
		if len(plan.Create) != 2 || len(plan.Update)+len(plan.Delete) != 0 {
			t.Fatalf("plan = %d create, %d update, %d delete; want 2 creations", len(plan.Create), len(plan.Update), len(plan.Delete))
		}
		for _, s := range plan.Create {
			if s.GenerateName != "svc-" {
				t.Errorf("generateName = %q", s.GenerateName)
			}
			want := map[string]string{"team": "a", discoveryv1.LabelServiceName: "svc", discoveryv1.LabelManagedBy: ManagedBy}
			if fmt.Sprint(s.Labels) != fmt.Sprint(want) {
				t.Errorf("labels = %v, want %v", s.Labels, want)
			}
			if fmt.Sprint(s.Annotations) != fmt.Sprint(map[string]string{"note": "x"}) {
				t.Errorf("annotations = %v: trigger time and last-applied must be dropped", s.Annotations)
			}
			owner := s.OwnerReferences[0]
			if owner.Kind != "Endpoints" || owner.Name != "svc" || owner.UID != "ep-uid" || !*owner.Controller {
				t.Errorf("owner = %+v", owner)
			}
			if *s.Ports[0].Name != "http" || *s.Ports[0].Port != 80 {
				t.Errorf("ports = %+v", s.Ports)
			}
			switch s.AddressType {
			case discoveryv1.AddressTypeIPv4:
				if len(s.Endpoints) != 2 || s.Endpoints[0].Addresses[0] != "10.0.0.1" || !*s.Endpoints[0].Conditions.Ready || *s.Endpoints[1].Conditions.Ready {
					t.Errorf("IPv4 endpoints = %+v", s.Endpoints)
				}
			case discoveryv1.AddressTypeIPv6:
				if len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != "fd00::1" {
					t.Errorf("IPv6 endpoints = %+v", s.Endpoints)
				}
			}
		}
	})

	ep := endpointsWith(corev1.EndpointSubset{Addresses: ips("10.0.0.1", "10.0.0.2"), Ports: http})
	existing := existingFrom(PlanSlices(ep, nil, 1000))
	tests := []struct {
		name                      string
		ep                        func() *corev1.Endpoints
		max                       int
		create, update, delete    int
		invalid, skipped          int
		wantEndpointsInFirstWrite int
		// The endpoints counted as upstream's metrics count them, and the slices the
		// desired groups will have.
		added, updated, removed, slices int
	}{
		{name: "unchanged: nothing to write", ep: func() *corev1.Endpoints { return ep.DeepCopy() }, slices: 1},
		{name: "only the trigger time changed: nothing to write", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Annotations[corev1.EndpointsLastChangeTriggerTime] = "later"
			return e
		}, slices: 1},
		{name: "an address added: the slice is updated in place", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets[0].Addresses = append(e.Subsets[0].Addresses, ips("10.0.0.3")...)
			return e
		}, update: 1, wantEndpointsInFirstWrite: 3, added: 1, slices: 1},
		{name: "an address turned not ready: updated", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets[0].Addresses, e.Subsets[0].NotReadyAddresses = ips("10.0.0.1"), ips("10.0.0.2")
			return e
		}, update: 1, wantEndpointsInFirstWrite: 2, updated: 1, slices: 1},
		{name: "an address gone: updated", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets[0].Addresses = ips("10.0.0.1")
			return e
		}, update: 1, wantEndpointsInFirstWrite: 1, removed: 1, slices: 1},
		{name: "a label changed: updated", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Labels["team"] = "b"
			return e
		}, update: 1, wantEndpointsInFirstWrite: 2, slices: 1},
		{name: "an Endpoints recreated under the same name: rebuilt", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.UID = "new-uid"
			return e
		}, update: 1, wantEndpointsInFirstWrite: 2, slices: 1},
		{name: "the port changed: the old slice is recycled for the new port", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets[0].Ports = []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}
			return e
		}, update: 1, wantEndpointsInFirstWrite: 2, added: 2, slices: 1},
		{name: "no addresses left: the slice goes", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets = nil
			return e
		}, delete: 1},
		{name: "invalid addresses skipped and counted", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets[0].Addresses = append(e.Subsets[0].Addresses, ips("bogus", "10.0.0.256")...)
			return e
		}, invalid: 2, skipped: 2, slices: 1},
		{name: "past the per-subset limit: ready first, the rest skipped", ep: func() *corev1.Endpoints {
			e := ep.DeepCopy()
			e.Subsets[0].NotReadyAddresses = ips("10.0.1.1", "10.0.1.2")
			return e
		}, max: 3, update: 1, skipped: 1, wantEndpointsInFirstWrite: 3, added: 1, slices: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 1000
			}
			var have []*discoveryv1.EndpointSlice
			for _, s := range existing {
				have = append(have, s.DeepCopy())
			}
			plan := PlanSlices(tt.ep(), have, max)
			if len(plan.Create) != tt.create || len(plan.Update) != tt.update || len(plan.Delete) != tt.delete {
				t.Fatalf("plan = %d create, %d update, %d delete; want %d, %d, %d",
					len(plan.Create), len(plan.Update), len(plan.Delete), tt.create, tt.update, tt.delete)
			}
			if plan.Invalid != tt.invalid || plan.Skipped != tt.skipped {
				t.Errorf("invalid, skipped = %d, %d; want %d, %d", plan.Invalid, plan.Skipped, tt.invalid, tt.skipped)
			}
			if plan.Added != tt.added || plan.Updated != tt.updated || plan.Removed != tt.removed {
				t.Errorf("added, updated, removed = %d, %d, %d; want %d, %d, %d",
					plan.Added, plan.Updated, plan.Removed, tt.added, tt.updated, tt.removed)
			}
			slices := 0
			for _, g := range plan.Groups {
				slices += g.Slices
			}
			if slices != tt.slices {
				t.Errorf("groups %v have %d slices; want %d", plan.Groups, slices, tt.slices)
			}
			if len(plan.Update) > 0 {
				u := plan.Update[0]
				if u.Name != "slice-0" || len(u.Endpoints) != tt.wantEndpointsInFirstWrite {
					t.Errorf("update of %q with %d endpoints; want slice-0 with %d", u.Name, len(u.Endpoints), tt.wantEndpointsInFirstWrite)
				}
			}
		})
	}

	t.Run("duplicate slices for one port list: all but one deleted", func(t *testing.T) {
		dup := existing[0].DeepCopy()
		dup.Name = "slice-9"
		plan := PlanSlices(ep, []*discoveryv1.EndpointSlice{existing[0].DeepCopy(), dup}, 1000)
		if len(plan.Delete) != 1 || plan.Delete[0].Name != "slice-9" || len(plan.Create)+len(plan.Update) != 0 {
			t.Errorf("plan = %+v", plan)
		}
	})
}

func TestValidateFlags(t *testing.T) {
	tests := []struct {
		workers, max int
		want         string
	}{
		{workers: 5, max: 1000},
		{workers: 1, max: 1},
		{workers: 50, max: 1000},
		{workers: 0, max: 1000, want: "mirroring-concurrent-service-endpoint-syncs must not be less than 1, but got 0"},
		{workers: 51, max: 1000, want: "mirroring-concurrent-service-endpoint-syncs must not be more than 50, but got 51"},
		{workers: 5, max: 0, want: "mirroring-max-endpoints-per-subset must not be less than 1, but got 0"},
		{workers: 5, max: 1001, want: "mirroring-max-endpoints-per-subset must not be more than 1000, but got 1001"},
	}
	for _, tt := range tests {
		err := ValidateFlags(tt.workers, tt.max)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("ValidateFlags(%d, %d) = %q, want %q", tt.workers, tt.max, got, tt.want)
		}
	}
}
