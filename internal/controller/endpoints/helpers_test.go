package endpoints_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

func createService(ctx context.Context, ns, name string, mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "blue"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
	for _, m := range mutate {
		m(svc)
	}
	Expect(env.Client.Create(ctx, svc)).To(Succeed())
	return svc
}

// createPod creates a pod labelled app=app on node-1 whose container names containerPort
// "http", and plays the kubelet: it runs with the IP, Ready or not (no IP when ip is "").
func createPod(ctx context.Context, ns, app, name, ip string, containerPort int32, ready bool) *corev1.Pod {
	GinkgoHelper()
	p := testenv.NewPod(ns, name, "node-1")
	p.Labels = map[string]string{"app": app}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: containerPort, Protocol: corev1.ProtocolTCP}}
	if ip == "" {
		return env.CreatePod(ctx, p)
	}
	return env.CreatePod(ctx, p, testenv.Running(ready, ip))
}

func getEndpoints(ctx context.Context, g Gomega, ns, name string) *corev1.Endpoints {
	ep := &corev1.Endpoints{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ep)).To(Succeed())
	return ep
}

func ipsOf(addrs []corev1.EndpointAddress) []string {
	out := []string{}
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	return out
}

// summary flattens subsets into "port: ready | not ready" lines.
func summary(ep *corev1.Endpoints) []string {
	var out []string
	for _, s := range ep.Subsets {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s/%d", p.Name, p.Port))
		}
		out = append(out, fmt.Sprintf("%v: %v | %v", ports, ipsOf(s.Addresses), ipsOf(s.NotReadyAddresses)))
	}
	return out
}
