package endpointslice_test

import (
	"context"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/endpointslice"
	"github.com/kcm/kcm/internal/testenv"
)

// service is a ClusterIP Service selecting app=app, port "http" 80 to targetPort.
func service(ns, name, app string, targetPort intstr.IntOrString) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": app},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: targetPort}},
		},
	}
}

type podOpts struct {
	node      string
	ips       []string
	ready     bool
	phase     corev1.PodPhase
	ports     []corev1.ContainerPort
	hostname  string
	subdomain string
	hold      bool      // a finalizer keeps the pod after deletion (terminating)
	since     time.Time // the Ready condition's lastTransitionTime (default now)
}

// createPod creates a pod and, playing the kubelet, writes its IPs, phase and readiness.
func createPod(ctx context.Context, ns, name, app string, o podOpts) *corev1.Pod {
	GinkgoHelper()
	p := testenv.NewPod(ns, name, o.node)
	p.Labels = map[string]string{"app": app}
	p.Spec.Hostname, p.Spec.Subdomain = o.hostname, o.subdomain
	p.Spec.Containers[0].Ports = o.ports
	if o.hold {
		p.Finalizers = []string{"test.kcm.io/hold"}
	}
	env.CreatePod(ctx, p)
	if len(o.ips) == 0 && o.phase == "" {
		return p
	}
	setStatus(ctx, p, o)
	return p
}

// setStatus plays the kubelet: the pod runs (or is in o.phase) with o's IPs, Ready as o
// says since o.since (default now).
func setStatus(ctx context.Context, p *corev1.Pod, o podOpts) {
	GinkgoHelper()
	since := o.since
	if since.IsZero() {
		since = time.Now()
	}
	status := []testenv.PodStatus{testenv.RunningSince(o.ready, since, o.ips...)}
	if o.phase != "" {
		status = append(status, testenv.Phase(o.phase, ""))
	}
	env.SetPodStatus(ctx, p, status...)
}

// slicesOf lists the controller's slices of a Service, sorted by name.
func slicesOf(ctx context.Context, g Gomega, ns, svc string) []discoveryv1.EndpointSlice {
	list := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
		discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: endpointslice.ManagedBy,
	})).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// endpointsByPod indexes the endpoints of slices by target pod name.
func endpointsByPod(slices []discoveryv1.EndpointSlice) map[string]discoveryv1.Endpoint {
	out := map[string]discoveryv1.Endpoint{}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			out[ep.TargetRef.Name] = ep
		}
	}
	return out
}

// conditions renders an endpoint's conditions as ready/serving/terminating.
func conditions(ep discoveryv1.Endpoint) [3]bool {
	b := func(p *bool) bool { return p != nil && *p }
	return [3]bool{b(ep.Conditions.Ready), b(ep.Conditions.Serving), b(ep.Conditions.Terminating)}
}
