package endpoints_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/endpoints"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("endpoints-controller", func() {
	It("lists ready pods in addresses and unready ones in notReadyAddresses, and deletes the Endpoints with its Service", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		svc := createService(ctx, ns, "web")
		a := createPod(ctx, ns, "web", "a", "10.0.0.1", 8080, true)
		createPod(ctx, ns, "web", "b", "10.0.0.2", 8080, false)
		createPod(ctx, ns, "web", "no-ip", "", 8080, false)
		createPod(ctx, ns, "other", "other", "10.0.0.9", 8080, true)

		Eventually(func(g Gomega) {
			ep := getEndpoints(ctx, g, ns, "web")
			g.Expect(summary(ep)).To(Equal([]string{"[web/8080]: [10.0.0.1] | [10.0.0.2]"}))
			g.Expect(ep.Labels).To(Equal(map[string]string{"team": "blue", endpoints.LabelManagedBy: "endpoint-controller"}))
			g.Expect(ep.Annotations).To(HaveKey(corev1.EndpointsLastChangeTriggerTime))
			addr := ep.Subsets[0].Addresses[0]
			g.Expect(addr.TargetRef).NotTo(BeNil())
			g.Expect([]any{addr.TargetRef.Kind, addr.TargetRef.Namespace, addr.TargetRef.Name, addr.TargetRef.UID}).To(Equal([]any{"Pod", ns, "a", a.UID}))
		}).Should(Succeed())

		By("the unready pod turning ready, and the ready one being deleted")
		b := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, b)).To(Succeed())
		env.SetPodStatus(ctx, b, testenv.Running(true, "10.0.0.2"))
		Expect(env.Client.Delete(ctx, a, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "web"))).To(Equal([]string{"[web/8080]: [10.0.0.2] | []"}))
		}).Should(Succeed())

		By("deleting the Service")
		Expect(env.Client.Delete(ctx, svc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Endpoints{}))
		}).Should(BeTrue())
	})

	It("publishes unready pods as ready with publishNotReadyAddresses, labels a headless Service's Endpoints, and recreates it when deleted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		createService(ctx, ns, "pub", func(s *corev1.Service) {
			s.Spec.PublishNotReadyAddresses = true
			s.Spec.ClusterIP = corev1.ClusterIPNone
		})
		createPod(ctx, ns, "pub", "a", "10.0.0.1", 8080, true)
		createPod(ctx, ns, "pub", "b", "10.0.0.2", 8080, false)
		Eventually(func(g Gomega) {
			ep := getEndpoints(ctx, g, ns, "pub")
			g.Expect(summary(ep)).To(Equal([]string{"[web/8080]: [10.0.0.1 10.0.0.2] | []"}))
			g.Expect(ep.Labels).To(HaveKeyWithValue(corev1.IsHeadlessService, ""))
		}).Should(Succeed())

		By("deleting the Endpoints: it comes back while the Service stands")
		Expect(env.Client.Delete(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pub"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "pub"))).To(Equal([]string{"[web/8080]: [10.0.0.1 10.0.0.2] | []"}))
		}).Should(Succeed())
	})

	It("splits pods whose named port resolves differently into two subsets", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		createService(ctx, ns, "named")
		createPod(ctx, ns, "named", "a", "10.0.0.1", 8080, true)
		createPod(ctx, ns, "named", "b", "10.0.0.2", 9090, true)
		createPod(ctx, ns, "named", "c", "10.0.0.3", 8080, false)
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "named"))).To(ConsistOf(
				"[web/8080]: [10.0.0.1] | [10.0.0.3]",
				"[web/9090]: [10.0.0.2] | []",
			))
		}).Should(Succeed())
	})

	It("leaves alone the Endpoints of a Service without a selector", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		createService(ctx, ns, "manual", func(s *corev1.Service) { s.Spec.Selector = nil })
		ep := &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual", Labels: map[string]string{"mine": "yes"}},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "192.168.0.7"}},
				Ports:     []corev1.EndpointPort{{Name: "web", Port: 1234, Protocol: corev1.ProtocolTCP}},
			}},
		}
		Expect(env.Client.Create(ctx, ep)).To(Succeed())
		createPod(ctx, ns, "manual", "a", "10.0.0.1", 8080, true)
		By("a Service created after it, selecting the same pod, gets its Endpoints: the controller saw them all")
		createService(ctx, ns, "control", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "manual"} })
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "control"))).To(Equal([]string{"[web/8080]: [10.0.0.1] | []"}))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			got := getEndpoints(ctx, g, ns, "manual")
			g.Expect(got.ResourceVersion).To(Equal(ep.ResourceVersion))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("the Service gaining a selector: the controller takes its Endpoints over")
		svc := &corev1.Service{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "manual"}, svc)).To(Succeed())
		svc.Spec.Selector = map[string]string{"app": "manual"}
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "manual"))).To(Equal([]string{"[web/8080]: [10.0.0.1] | []"}))
		}).Should(Succeed())
	})

	It("does not write the Endpoints again when nothing it lists changed", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		svc := createService(ctx, ns, "quiet")
		p := createPod(ctx, ns, "quiet", "a", "10.0.0.1", 8080, true)
		var rv string
		Eventually(func(g Gomega) {
			ep := getEndpoints(ctx, g, ns, "quiet")
			g.Expect(summary(ep)).To(Equal([]string{"[web/8080]: [10.0.0.1] | []"}))
			rv = ep.ResourceVersion
		}).Should(Succeed())
		// Let any write racing the first one land before taking the reference.
		Consistently(func(g Gomega) string { return getEndpoints(ctx, g, ns, "quiet").ResourceVersion }).
			Should(Equal(rv))

		By("changing the Service (a sync runs) and a pod's annotations")
		svc.Annotations = map[string]string{"touched": "1"}
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		p.Annotations = map[string]string{"touched": "1"}
		Expect(env.Client.Update(ctx, p)).To(Succeed())
		Consistently(func(g Gomega) string { return getEndpoints(ctx, g, ns, "quiet").ResourceVersion }).
			WithTimeout(3 * time.Second).Should(Equal(rv))

		By("a change that matters is still written")
		createPod(ctx, ns, "quiet", "b", "10.0.0.2", 8080, true)
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "quiet"))).To(Equal([]string{"[web/8080]: [10.0.0.1 10.0.0.2] | []"}))
		}).Should(Succeed())
	})

	It("truncates past 1000 addresses, ready ones first, with the over-capacity annotation, and drops it below", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		createService(ctx, ns, "big")
		const ready, unready = 1003, 2
		// The test plays the kubelet for many pods: a few writers in parallel.
		var wg sync.WaitGroup
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range work {
					createPod(ctx, ns, "big", fmt.Sprintf("p-%04d", i), fmt.Sprintf("10.1.%d.%d", i/200, i%200+1), 8080, i < ready)
				}
			})
		}
		for i := range ready + unready {
			work <- i
		}
		close(work)
		wg.Wait()

		Eventually(func(g Gomega) {
			ep := getEndpoints(ctx, g, ns, "big")
			g.Expect(ep.Annotations).To(HaveKeyWithValue(corev1.EndpointsOverCapacity, "truncated"))
			g.Expect(ep.Subsets).To(HaveLen(1))
			g.Expect(ep.Subsets[0].Addresses).To(HaveLen(1000))
			g.Expect(ep.Subsets[0].NotReadyAddresses).To(BeEmpty())
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("deleting pods until 1000 remain")
		for i := range 5 {
			Expect(env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%04d", i)}},
				client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			ep := getEndpoints(ctx, g, ns, "big")
			g.Expect(ep.Annotations).NotTo(HaveKey(corev1.EndpointsOverCapacity))
			g.Expect(ep.Subsets).To(HaveLen(1))
			g.Expect(ep.Subsets[0].Addresses).To(HaveLen(ready - 5))
			g.Expect(ep.Subsets[0].NotReadyAddresses).To(HaveLen(unready))
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("deletes at start the Endpoints whose Service went while it was not running, but not leader-election locks", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		Expect(env.StopManager()).To(Succeed())
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				Expect(env.StartManager([]string{endpoints.ControllerName})).To(Succeed())
			}
		})
		subset := corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}}
		orphan := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Subsets: []corev1.EndpointSubset{subset}}
		lock := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lock",
			Annotations: map[string]string{"control-plane.alpha.kubernetes.io/leader": "{}"}}}
		Expect(env.Client.Create(ctx, orphan)).To(Succeed())
		Expect(env.Client.Create(ctx, lock)).To(Succeed())

		Expect(env.StartManager([]string{endpoints.ControllerName})).To(Succeed())
		restarted = true
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(orphan), &corev1.Endpoints{}))
		}).Should(BeTrue())
		Consistently(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(lock), &corev1.Endpoints{})
		}).Should(Succeed())
	})

	It("reports a failed creation with a FailedToCreateEndpoint Event, and retries", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "ep")
		// A validating admission policy refusing Endpoints in this namespace.
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "refuse-endpoints-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"endpoints"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no endpoints here"}},
			},
		}
		Expect(env.Client.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, policy))).To(Succeed()) })
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
				}},
			},
		}
		Expect(env.Client.Create(ctx, binding)).To(Succeed())
		// The API server enforces the policy once its informers see it.
		Eventually(func() error {
			probe := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
			err := env.Client.Create(ctx, probe)
			if err == nil {
				_ = env.Client.Delete(ctx, probe)
			}
			return err
		}).Should(HaveOccurred())
		createService(ctx, ns, "refused")
		createPod(ctx, ns, "refused", "a", "10.0.0.1", 8080, true)
		env.ExpectEvent(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused"}}, testenv.Event{
			Type: corev1.EventTypeWarning, Reason: "FailedToCreateEndpoint",
			Message: HavePrefix(fmt.Sprintf("Failed to create endpoint for service %s/refused: ", ns))})

		Expect(env.Client.Delete(ctx, binding)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(summary(getEndpoints(ctx, g, ns, "refused"))).To(Equal([]string{"[web/8080]: [10.0.0.1] | []"}))
		}).Should(Succeed())
	})
})
