package endpoints

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func addr(ip string) corev1.EndpointAddress {
	return corev1.EndpointAddress{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p-" + ip, UID: types.UID("uid-" + ip)}}
}

func port(name string, n int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

func addrs(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, addr(ip))
	}
	return out
}

func TestRepackSubsets(t *testing.T) {
	tests := []struct {
		name string
		in   []corev1.EndpointSubset
		want []corev1.EndpointSubset
	}{
		{name: "empty", in: nil, want: []corev1.EndpointSubset{}},
		{
			name: "one address per subset, same port: merged and sorted",
			in: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.2"), Ports: []corev1.EndpointPort{port("http", 80)}},
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("http", 80)}},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{port("http", 80)}}},
		},
		{
			name: "ports offered by the same addresses share a subset",
			in: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("b", 81)}},
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("a", 80)}},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("a", 80), port("b", 81)}}},
		},
		{
			name: "a named port resolving differently splits the subsets",
			in: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("http", 8080)}},
				{Addresses: addrs("10.0.0.2"), Ports: []corev1.EndpointPort{port("http", 9090)}},
				{Addresses: addrs("10.0.0.3"), Ports: []corev1.EndpointPort{port("http", 8080)}},
			},
			want: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1", "10.0.0.3"), Ports: []corev1.EndpointPort{port("http", 8080)}},
				{Addresses: addrs("10.0.0.2"), Ports: []corev1.EndpointPort{port("http", 9090)}},
			},
		},
		{
			name: "not ready wins over ready for the same address and port",
			in: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{port("http", 80)}},
				{NotReadyAddresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("http", 80)}},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.2"), NotReadyAddresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("http", 80)}}},
		},
		{
			name: "addresses without ports are kept",
			in:   []corev1.EndpointSubset{{Addresses: addrs("10.0.0.2")}, {NotReadyAddresses: addrs("10.0.0.1")}},
			want: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.2"), NotReadyAddresses: addrs("10.0.0.1")}},
		},
		{
			name: "same IP, different pods (host network): both kept",
			in: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{
				{IP: "10.0.0.1", TargetRef: &corev1.ObjectReference{UID: "b"}},
				{IP: "10.0.0.1", TargetRef: &corev1.ObjectReference{UID: "a"}},
			}, Ports: []corev1.EndpointPort{port("", 80)}}},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{
				{IP: "10.0.0.1", TargetRef: &corev1.ObjectReference{UID: "a"}},
				{IP: "10.0.0.1", TargetRef: &corev1.ObjectReference{UID: "b"}},
			}, Ports: []corev1.EndpointPort{port("", 80)}}},
		},
		{
			name: "a subset with ports but no addresses disappears",
			in:   []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{port("http", 80)}}},
			want: []corev1.EndpointSubset{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RepackSubsets(tt.in)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("RepackSubsets:\n got %+v\nwant %+v", got, tt.want)
			}
			if again := RepackSubsets(got); !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("repacking is not idempotent: %+v", again)
			}
		})
	}
}

func manyAddrs(prefix string, n int) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, n)
	for i := range out {
		out[i] = addr(fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250))
	}
	return out
}

func TestTruncate(t *testing.T) {
	type counts struct{ ready, notReady int }
	tests := []struct {
		name          string
		in            []counts
		max           int
		want          []counts
		wantTruncated bool
	}{
		{name: "under capacity", in: []counts{{3, 2}}, max: 5, want: []counts{{3, 2}}},
		{name: "not-ready cut first", in: []counts{{3, 4}}, max: 5, want: []counts{{3, 2}}, wantTruncated: true},
		{
			name: "not-ready shared in proportion",
			in:   []counts{{2, 6}, {2, 2}}, max: 8,
			// room 4 for 8 not-ready: ceil(6/8*4)=3, then ceil(2/8*4)=1.
			want: []counts{{2, 3}, {2, 1}}, wantTruncated: true,
		},
		{
			name: "too many ready: ready shared in proportion, every not-ready dropped",
			in:   []counts{{600, 10}, {600, 0}}, max: 1000,
			want: []counts{{500, 0}, {500, 0}}, wantTruncated: true,
		},
		{
			name: "rounding up leaves the last subset short",
			in:   []counts{{1, 0}, {1, 0}, {1, 0}}, max: 2,
			want: []counts{{1, 0}, {1, 0}}, wantTruncated: true,
		},
		{
			name: "a subset of only not-ready addresses is dropped when ready ones fill the capacity",
			in:   []counts{{3, 0}, {0, 2}}, max: 2,
			want: []counts{{2, 0}}, wantTruncated: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var subsets []corev1.EndpointSubset
			for i, c := range tt.in {
				subsets = append(subsets, corev1.EndpointSubset{
					Addresses:         manyAddrs(fmt.Sprintf("10.%d", i), c.ready),
					NotReadyAddresses: manyAddrs(fmt.Sprintf("11.%d", i), c.notReady),
				})
			}
			got, truncated := Truncate(subsets, tt.max)
			if truncated != tt.wantTruncated {
				t.Errorf("truncated = %v, want %v", truncated, tt.wantTruncated)
			}
			var gotCounts []counts
			for _, s := range got {
				gotCounts = append(gotCounts, counts{len(s.Addresses), len(s.NotReadyAddresses)})
			}
			if fmt.Sprint(gotCounts) != fmt.Sprint(tt.want) {
				t.Errorf("counts = %v, want %v", gotCounts, tt.want)
			}
		})
	}
}

func testPod(name, ip string, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestDesiredSubsets(t *testing.T) {
	svc := func(mutate ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
			Spec: corev1.ServiceSpec{
				ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
				Selector: map[string]string{"app": "x"},
				Ports:    []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
			},
		}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	webPort := func(n int32) []corev1.EndpointPort { return []corev1.EndpointPort{port("web", n)} }
	address := func(p *corev1.Pod, hostname string) corev1.EndpointAddress {
		return corev1.EndpointAddress{IP: p.Status.PodIP, Hostname: hostname, NodeName: ptr.To("node"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: p.Name, UID: p.UID}}
	}
	ready, unready := testPod("a", "10.0.0.1", true), testPod("b", "10.0.0.2", false)
	deleting := testPod("c", "10.0.0.3", true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
	noIP := testPod("d", "", true, func(p *corev1.Pod) { p.Status.PodIPs = nil })
	failed := testPod("e", "10.0.0.5", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	other := testPod("f", "10.0.0.6", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 })
	named := testPod("g", "10.0.0.7", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "g0", "svc" })
	v6 := testPod("h", "fd00::1", true)

	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		{
			name: "ready and not-ready; terminating, IP-less and finished pods left out",
			svc:  svc(), pods: []*corev1.Pod{ready, unready, deleting, noIP, failed},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{address(ready, "")},
				NotReadyAddresses: []corev1.EndpointAddress{address(unready, "")}, Ports: webPort(8080)}},
		},
		{
			name: "publishNotReadyAddresses: all ready, terminating included",
			svc:  svc(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }), pods: []*corev1.Pod{ready, unready, deleting},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{address(ready, ""), address(unready, ""), address(deleting, "")}, Ports: webPort(8080)}},
		},
		{
			name: "a named port resolving differently gives two subsets",
			svc:  svc(), pods: []*corev1.Pod{ready, other},
			want: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{address(ready, "")}, Ports: webPort(8080)},
				{Addresses: []corev1.EndpointAddress{address(other, "")}, Ports: webPort(9090)},
			},
		},
		{
			name: "hostname when the subdomain is the Service",
			svc:  svc(), pods: []*corev1.Pod{named},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{address(named, "g0")}, Ports: webPort(8080)}},
		},
		{
			name: "an IPv4 Service ignores IPv6 pods",
			svc:  svc(), pods: []*corev1.Pod{v6},
			want: []corev1.EndpointSubset{},
		},
		{
			name: "a port that resolves on no pod gives nothing",
			svc: svc(func(s *corev1.Service) {
				s.Spec.Ports[0].TargetPort = intstr.FromString("grpc")
			}),
			pods: []*corev1.Pod{ready},
			want: []corev1.EndpointSubset{},
		},
		{
			name: "headless without ports: port-less addresses",
			svc:  svc(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.Ports = corev1.ClusterIPNone, nil }),
			pods: []*corev1.Pod{ready},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{address(ready, "")}}},
		},
		{
			name: "not headless and without ports: nothing",
			svc:  svc(func(s *corev1.Service) { s.Spec.Ports = nil }),
			pods: []*corev1.Pod{ready},
			want: []corev1.EndpointSubset{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DesiredSubsets(tt.svc, tt.pods)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("DesiredSubsets:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDesiredAndUpToDate(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Labels: map[string]string{"team": "a"}},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "x"}},
	}
	subsets := []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("web", 80)}}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	ep := Desired(nil, svc, subsets, at)
	wantLabels := map[string]string{"team": "a", corev1.IsHeadlessService: "", LabelManagedBy: ManagedByValue}
	if !equality.Semantic.DeepEqual(ep.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", ep.Labels, wantLabels)
	}
	if got := ep.Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-01-02T03:04:05.000000006Z" {
		t.Errorf("trigger time annotation = %q", got)
	}

	current := ep.DeepCopy()
	current.Annotations["user"] = "kept"
	current.Subsets[0].Addresses[0].TargetRef.ResourceVersion = "42"
	tests := []struct {
		name    string
		mutate  func(*corev1.Endpoints)
		trigger time.Time
		want    bool
	}{
		{name: "same but the targets' resourceVersion and a new trigger time", mutate: func(*corev1.Endpoints) {}, trigger: at.Add(time.Second), want: true},
		{name: "labels differ", mutate: func(e *corev1.Endpoints) { e.Labels["team"] = "b" }, want: false},
		{name: "managed-by missing", mutate: func(e *corev1.Endpoints) { delete(e.Labels, LabelManagedBy) }, want: false},
		{name: "subsets differ", mutate: func(e *corev1.Endpoints) { e.Subsets[0].Addresses = addrs("10.0.0.2") }, want: false},
		{name: "packed differently", mutate: func(e *corev1.Endpoints) {
			e.Subsets = []corev1.EndpointSubset{e.Subsets[0], e.Subsets[0]}
		}, want: true},
		{name: "stray over-capacity annotation", mutate: func(e *corev1.Endpoints) { e.Annotations[corev1.EndpointsOverCapacity] = Truncated }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := current.DeepCopy()
			tt.mutate(cur)
			desired := Desired(cur, svc, RepackSubsets(subsets), tt.trigger)
			if got := UpToDate(cur, desired); got != tt.want {
				t.Errorf("UpToDate = %v, want %v", got, tt.want)
			}
			if desired.Annotations["user"] != "kept" {
				t.Error("other annotations must be kept")
			}
		})
	}
}
