package pod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestInEndpoints(t *testing.T) {
	withIP := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	tests := map[string]struct {
		pod *corev1.Pod
		// with and without terminating pods
		want [2]bool
	}{
		"running with IP":     {withIP(), [2]bool{true, true}},
		"no IP":               {withIP(func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }), [2]bool{false, false}},
		"podIPs only":         {withIP(func(p *corev1.Pod) { p.Status.PodIP = "" }), [2]bool{true, true}},
		"pending with IP":     {withIP(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), [2]bool{true, true}},
		"succeeded":           {withIP(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), [2]bool{false, false}},
		"failed":              {withIP(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), [2]bool{false, false}},
		"terminating":         {withIP(deleting), [2]bool{true, false}},
		"terminating, failed": {withIP(deleting, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), [2]bool{false, false}},
	}
	for name, tt := range tests {
		got := [2]bool{InEndpoints(tt.pod, true), InEndpoints(tt.pod, false)}
		if got != tt.want {
			t.Errorf("%s: InEndpoints(terminating included, not) = %v, want %v", name, got, tt.want)
		}
	}
}

func TestFindPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		}}},
		InitContainers: []corev1.Container{
			{Ports: []corev1.ContainerPort{{Name: "init", ContainerPort: 1, Protocol: corev1.ProtocolTCP}}},
			{RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "sidecar", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}}},
		},
	}}
	tests := map[string]struct {
		port    corev1.ServicePort
		want    int32
		wantErr bool
	}{
		"number":             {corev1.ServicePort{TargetPort: intstr.FromInt32(81), Protocol: corev1.ProtocolTCP}, 81, false},
		"name":               {corev1.ServicePort{TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP}, 8080, false},
		"name, protocol":     {corev1.ServicePort{TargetPort: intstr.FromString("dns"), Protocol: corev1.ProtocolUDP}, 53, false},
		"wrong protocol":     {corev1.ServicePort{TargetPort: intstr.FromString("dns"), Protocol: corev1.ProtocolTCP}, 0, true},
		"sidecar":            {corev1.ServicePort{TargetPort: intstr.FromString("sidecar"), Protocol: corev1.ProtocolTCP}, 9000, false},
		"plain init ignored": {corev1.ServicePort{TargetPort: intstr.FromString("init"), Protocol: corev1.ProtocolTCP}, 0, true},
		"missing":            {corev1.ServicePort{TargetPort: intstr.FromString("nope"), Protocol: corev1.ProtocolTCP}, 0, true},
	}
	for name, tt := range tests {
		got, err := FindPort(p, &tt.port)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: FindPort = %d, %v; want %d, error %v", name, got, err, tt.want, tt.wantErr)
		}
	}
}
