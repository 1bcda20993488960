package deployment_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

const hashLabel = appsv1.DefaultDeploymentUniqueLabelKey

// newDeployment is a RollingUpdate Deployment with upstream's defaults spelled out.
func newDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

func withRolling(d *appsv1.Deployment, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
	return d
}

func getDeployment(ctx context.Context, g Gomega, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
	return d
}

// updateDeployment applies change to the latest Deployment, retrying on conflicts.
func updateDeployment(ctx context.Context, ns, name string, change func(*appsv1.Deployment)) {
	Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		change(d)
		return env.Client.Update(ctx, d)
	}).Should(Succeed())
}

func setImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

func setReplicas(n int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = &n }
}

// replicaSets lists the ReplicaSets of a namespace, by pod-template-hash.
func replicaSets(ctx context.Context, g Gomega, ns string) map[string]appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]appsv1.ReplicaSet{}
	for _, rs := range list.Items {
		out[rs.Labels[hashLabel]] = rs
	}
	return out
}

// replicaSetFor returns the ReplicaSet whose template has the given image.
func replicaSetFor(ctx context.Context, g Gomega, ns, image string) appsv1.ReplicaSet {
	for _, rs := range replicaSets(ctx, g, ns) {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			return rs
		}
	}
	g.Expect("no ReplicaSet for " + image).To(BeEmpty())
	return appsv1.ReplicaSet{}
}

// pods lists the pods of a namespace that are not being deleted.
func pods(ctx context.Context, g Gomega, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

func progressing(d *appsv1.Deployment) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}

func available(d *appsv1.Deployment) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}

// expectRolledOut is `kubectl rollout status`'s test of a finished rollout.
func expectRolledOut(ctx context.Context, ns, name string) *appsv1.Deployment {
	var d *appsv1.Deployment
	Eventually(func(g Gomega) {
		d = getDeployment(ctx, g, ns, name)
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(*d.Spec.Replicas))
		g.Expect(d.Status.Replicas).To(Equal(d.Status.UpdatedReplicas))
		g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas))
		g.Expect(progressing(d).Reason).To(Equal("NewReplicaSetAvailable"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return d
}

// events returns the notes of the namespace's Events with the given reason reported by
// deployment-controller.
func events(ctx context.Context, g Gomega, ns, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Reason == reason && e.ReportingController == "deployment-controller" {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// kubelet plays the node agent for a namespace, in a goroutine polling every 100ms: it
// marks pods Running and Ready, optionally binds them to a node (their deletion then waits
// for it), and finishes the deletion of terminating pods.
type kubelet struct {
	// Ready says which pods become ready; nil: all.
	Ready func(*corev1.Pod) bool
	// ReadyAfter is how long after the kubelet first sees a pod it becomes ready.
	ReadyAfter time.Duration
	// Node, when set, is the node new pods are bound to.
	Node string
	// FinishAfter is how long a terminating pod stays before it is gone.
	FinishAfter time.Duration
}

// start runs the kubelet until the spec ends.
func (k kubelet) start(ctx context.Context, ns string) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	DeferCleanup(func() { cancel(); wg.Wait() })
	firstSeen, terminatingSince := map[types.UID]time.Time{}, map[types.UID]time.Time{}
	wg.Go(func() {
		defer GinkgoRecover()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			list := &corev1.PodList{}
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				continue
			}
			now := time.Now()
			for i := range list.Items {
				p := &list.Items[i]
				if _, ok := firstSeen[p.UID]; !ok {
					firstSeen[p.UID] = now
				}
				switch {
				case p.DeletionTimestamp != nil:
					if _, ok := terminatingSince[p.UID]; !ok {
						terminatingSince[p.UID] = now
					}
					if now.Sub(terminatingSince[p.UID]) >= k.FinishAfter {
						_ = env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))
					}
				case k.Node != "" && p.Spec.NodeName == "":
					_ = env.Client.SubResource("binding").Create(ctx, p, &corev1.Binding{
						ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
						Target:     corev1.ObjectReference{Kind: "Node", Name: k.Node},
					})
				case !isReady(p) && (k.Ready == nil || k.Ready(p)) && now.Sub(firstSeen[p.UID]) >= k.ReadyAfter:
					_ = env.ReportPodStatus(ctx, p, testenv.RunningSince(true, now))
				}
			}
		}
	})
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is one observation of a namespace's pods, by pod-template-hash.
type podState struct {
	// Live counts the pods not being deleted, Ready the ready ones among them.
	Live, Ready map[string]int
	// All counts every pod, terminating ones included.
	All map[string]int
	// Pods names every pod with its readiness, for failure messages.
	Pods []string
}

func (s podState) total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// observePods records the pods' state every 100ms until the returned function is called,
// which returns every state seen.
func observePods(ctx context.Context, ns string) func() []podState {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu     sync.Mutex
		states []podState
		wg     sync.WaitGroup
	)
	wg.Go(func() {
		defer GinkgoRecover()
		for {
			list := &corev1.PodList{}
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err == nil {
				s := podState{Live: map[string]int{}, Ready: map[string]int{}, All: map[string]int{}}
				for _, p := range list.Items {
					h := p.Labels[hashLabel]
					s.All[h]++
					s.Pods = append(s.Pods, fmt.Sprintf("%s(ready=%v,deleting=%v)", p.Name, isReady(&p), p.DeletionTimestamp != nil))
					if p.DeletionTimestamp == nil {
						s.Live[h]++
						if isReady(&p) {
							s.Ready[h]++
						}
					}
				}
				mu.Lock()
				states = append(states, s)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	stop := func() []podState {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return states
	}
	DeferCleanup(func() { stop() })
	return stop
}
