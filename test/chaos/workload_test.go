//go:build chaos && linux

package chaos_test

import (
	"context"
	"fmt"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/pod"
)

// workloadSize is how much of each kind the workload has.
type workloadSize struct {
	// Deployments of Replicas each, rolling with maxSurge 2 and maxUnavailable 0.
	Deployments, Replicas int
	// Jobs created when a fault begins, each of Completions at Parallelism.
	Jobs, Completions, Parallelism int
	// StatefulReplicas is the StatefulSet's size.
	StatefulReplicas int
	// Services select the first Deployments' pods.
	Services int
}

const (
	pauseImage = "registry.k8s.io/pause:3.10"
	// roundAnnotation in a pod template: changing it rolls the Deployments, the StatefulSet
	// and the DaemonSet.
	roundAnnotation = "chaos.kcm.io/round"
	maxSurge        = 2
)

func template(labels map[string]string, round int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{roundAnnotation: strconv.Itoa(round)}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: pauseImage}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
}

// createWorkload creates the standing workload in ns: Deployments, their Services, a
// StatefulSet with its headless Service, a DaemonSet on every node.
func createWorkload(ctx context.Context, cl client.Client, ns string, size workloadSize) {
	GinkgoHelper()
	var objs []client.Object
	for i := range size.Deployments {
		name := fmt.Sprintf("d-%d", i)
		labels := map[string]string{"app": name}
		objs = append(objs, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(size.Replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: template(labels, 0),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(maxSurge)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			},
		})
		if i < size.Services {
			objs = append(objs, service(ns, "svc-"+strconv.Itoa(i), labels, false))
		}
	}
	stsLabels := map[string]string{"app": "s"}
	objs = append(objs, service(ns, "s", stsLabels, true), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(size.StatefulReplicas)),
			ServiceName: "s",
			Selector:    &metav1.LabelSelector{MatchLabels: stsLabels},
			Template:    template(stsLabels, 0),
		},
	})
	dsLabels := map[string]string{"app": "ds"}
	objs = append(objs, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ds"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: template(dsLabels, 0),
		},
	})
	for _, o := range objs {
		Expect(cl.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
}

func service(ns, name string, selector map[string]string, headless bool) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	return svc
}

// startRound begins what the fault must not spoil: every Deployment, the StatefulSet and the
// DaemonSet roll to template round, and the round's Jobs are created.
func startRound(ctx context.Context, cl client.Client, ns string, size workloadSize, round int) {
	GinkgoHelper()
	value := strconv.Itoa(round)
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"`+roundAnnotation+`":"`+value+`"}}}}}`))
	for i := range size.Deployments {
		Expect(cl.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d-%d", i)}}, patch)).To(Succeed())
	}
	Expect(cl.Patch(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}, patch)).To(Succeed())
	Expect(cl.Patch(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ds"}}, patch)).To(Succeed())
	for i := range size.Jobs {
		labels := map[string]string{"job": fmt.Sprintf("j-%d-%d", round, i)}
		t := template(labels, round)
		t.Spec.RestartPolicy = corev1.RestartPolicyNever
		Expect(cl.Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("j-%d-%d", round, i)},
			Spec: batchv1.JobSpec{
				Completions: ptr.To(int32(size.Completions)),
				Parallelism: ptr.To(int32(size.Parallelism)),
				Template:    t,
			},
		})).To(Succeed())
	}
}

// createDoomedNamespace creates a namespace with a Deployment and a ConfigMap in it, to be
// deleted while the fault lasts: the namespace controller must still empty and remove it.
func createDoomedNamespace(ctx context.Context, cl client.Client) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-doomed-"}}
	Expect(cl.Create(ctx, ns)).To(Succeed())
	labels := map[string]string{"app": "doomed"}
	Expect(cl.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "doomed"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels, 0)},
	})).To(Succeed())
	Expect(cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "doomed"}})).To(Succeed())
	return ns.Name
}

// endpointsPending lists the Services of ns whose EndpointSlices do not hold exactly the
// ready pods their selector matches.
func endpointsPending(ctx context.Context, cl client.Client, ns string) ([]string, error) {
	services := &corev1.ServiceList{}
	if err := cl.List(ctx, services, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var pending []string
	for _, svc := range services.Items {
		pods := &corev1.PodList{}
		if err := cl.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(svc.Spec.Selector)); err != nil {
			return nil, err
		}
		ready := map[string]bool{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.PodIP != "" && pod.IsReady(&p) {
				ready[p.Name] = true
			}
		}
		slices := &discoveryv1.EndpointSliceList{}
		if err := cl.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
			return nil, err
		}
		inSlices := map[string]bool{}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && ptr.Deref(e.Conditions.Ready, false) {
					inSlices[e.TargetRef.Name] = true
				}
			}
		}
		if len(ready) != len(inSlices) {
			pending = append(pending, fmt.Sprintf("Service %s: %d ready pods, %d ready endpoints", svc.Name, len(ready), len(inSlices)))
			continue
		}
		for name := range ready {
			if !inSlices[name] {
				pending = append(pending, fmt.Sprintf("Service %s: ready pod %s not in its EndpointSlices", svc.Name, name))
				break
			}
		}
	}
	return pending, nil
}
