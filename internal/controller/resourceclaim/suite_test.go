package resourceclaim_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestResourceClaimController(t *testing.T) {
	testenv.RunSuite(t, "resourceclaim-controller suite")
}

// The API server serves resource.k8s.io/v1 by default in v1.37: no extra flags.
var _ = BeforeSuite(func() {
	env = testenv.MustStart([]string{"resourceclaim-controller"})
})

const (
	driver = "gpu.example.com"
	// class is a DeviceClass name; claims are valid without the class existing.
	class = "gpu.example.com"
)

func claimSpec() resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name:    "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class},
	}}}}
}

func createTemplate(ctx context.Context, ns, name string) *resourceapi.ResourceClaimTemplate {
	t := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"type": "gpu"}, Annotations: map[string]string{"note": "from template"}},
			Spec:       claimSpec(),
		},
	}
	Expect(env.Client.Create(ctx, t)).To(Succeed())
	return t
}

// podClaim is a pod's claim "gpu", from a template or naming a claim.
func fromTemplate(tmpl string) corev1.PodResourceClaim {
	return corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: &tmpl}
}

func named(claim string) corev1.PodResourceClaim {
	return corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: &claim}
}

// createPod creates a pod whose container uses its claim "gpu", on node when not "".
func createPod(ctx context.Context, ns, name, node string, pc corev1.PodResourceClaim) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{pc},
		},
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

func getClaim(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	c := &resourceapi.ResourceClaim{}
	return c, env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)
}

// expectGeneratedClaim waits for the pod's status to name its generated claim "gpu", and
// checks the claim is upstream's: generated name, annotation, controlled by the pod, the
// template's labels, annotations and spec.
func expectGeneratedClaim(ctx context.Context, p *corev1.Pod) *resourceapi.ResourceClaim {
	GinkgoHelper()
	var name string
	Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		g.Expect(got.Status.ResourceClaimStatuses).To(HaveLen(1))
		g.Expect(got.Status.ResourceClaimStatuses[0].Name).To(Equal("gpu"))
		g.Expect(got.Status.ResourceClaimStatuses[0].ResourceClaimName).NotTo(BeNil())
		name = *got.Status.ResourceClaimStatuses[0].ResourceClaimName
	}).Should(Succeed())
	claim, err := getClaim(ctx, p.Namespace, name)
	Expect(err).NotTo(HaveOccurred())
	Expect(claim.GenerateName).To(Equal(p.Name + "-gpu-"))
	Expect(claim.Name).To(HavePrefix(p.Name + "-gpu-"))
	Expect(claim.Annotations).To(Equal(map[string]string{"note": "from template", resourceapi.PodResourceClaimAnnotation: "gpu"}))
	Expect(claim.Labels).To(Equal(map[string]string{"type": "gpu"}))
	Expect(claim.OwnerReferences).To(Equal([]metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true),
	}}))
	tmpl := &resourceapi.ResourceClaimTemplate{}
	Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: *p.Spec.ResourceClaims[0].ResourceClaimTemplateName}, tmpl)).To(Succeed())
	Expect(claim.Spec).To(Equal(tmpl.Spec.Spec), "the template's spec as the API server defaulted it")
	Expect(claim.Spec.Devices.Requests[0].Exactly.DeviceClassName).To(Equal(class))
	return claim
}

// allocate plays the scheduler: the built-in finalizer, then an allocation of one device and,
// when reserve, a reservation for the pod.
func allocate(ctx context.Context, claim *resourceapi.ResourceClaim, reserveFor *corev1.Pod) {
	GinkgoHelper()
	Eventually(func() error {
		got, err := getClaim(ctx, claim.Namespace, claim.Name)
		if err != nil {
			return err
		}
		if !slices.Contains(got.Finalizers, resourceapi.Finalizer) {
			got.Finalizers = append(got.Finalizers, resourceapi.Finalizer)
			if err := env.Client.Update(ctx, got); err != nil {
				return err
			}
		}
		got.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: "node-1", Device: "gpu-0"}},
		}}
		got.Status.ReservedFor = nil
		if reserveFor != nil {
			got.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: reserveFor.Name, UID: reserveFor.UID}}
		}
		return env.Client.Status().Update(ctx, got)
	}).Should(Succeed())
}

// finish plays the kubelet: the pod ran to completion.
func finish(ctx context.Context, p *corev1.Pod) {
	GinkgoHelper()
	Eventually(func() error {
		got := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		got.Status.Phase = corev1.PodSucceeded
		return env.Client.Status().Update(ctx, got)
	}).Should(Succeed())
}

// expectEvent waits for a core/v1 Event of the controller about the pod.
func expectEvent(ctx context.Context, p *corev1.Pod, reason, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		list := &corev1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(p.Namespace))).To(Succeed())
		g.Expect(slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name && e.Type == corev1.EventTypeWarning &&
				e.Reason == reason && e.Message == message && e.Source.Component == "resource_claim"
		})).To(BeTrue(), "events: %v", list.Items)
	}).Should(Succeed())
}

var _ = Describe("resourceclaim-controller", func() {
	It("generates the pod's claim from its template and records it in the pod's status", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		createTemplate(ctx, ns, "gpu-template")
		p := createPod(ctx, ns, "trainer", "", fromTemplate("gpu-template"))
		expectGeneratedClaim(ctx, p)

		By("one claim only: the status names the one the controller made")
		claims := &resourceapi.ResourceClaimList{}
		Expect(env.Client.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
		Expect(claims.Items).To(HaveLen(1))
	})

	It("makes the claim again when the one the pod's status names is deleted while the pod lives", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		createTemplate(ctx, ns, "gpu-template")
		p := createPod(ctx, ns, "server", "", fromTemplate("gpu-template"))
		first := expectGeneratedClaim(ctx, p)
		Expect(env.Client.Delete(ctx, first)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
			g.Expect(got.Status.ResourceClaimStatuses).To(HaveLen(1))
			g.Expect(got.Status.ResourceClaimStatuses[0].ResourceClaimName).To(HaveValue(Not(Equal(first.Name))))
		}).Should(Succeed())
		second := expectGeneratedClaim(ctx, p)
		Expect(second.UID).NotTo(Equal(first.UID))
	})

	It("cuts a long generated name in proportion, keeping part of the pod's and the claim's names", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		createTemplate(ctx, ns, "t")
		podName := strings.Repeat("p", 60)
		p := createPod(ctx, ns, podName, "", fromTemplate("t"))
		Eventually(func(g Gomega) {
			claims := &resourceapi.ResourceClaimList{}
			g.Expect(env.Client.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
			g.Expect(claims.Items).To(HaveLen(1))
			// 57 of 65 characters ("<pod>-gpu-"): pod 60*57/65 = 52, claim 3*57/65 = 2, no final hyphen.
			g.Expect(claims.Items[0].GenerateName).To(Equal(strings.Repeat("p", 52) + "-gp"))
			g.Expect(claims.Items[0].OwnerReferences[0].UID).To(Equal(p.UID))
		}).Should(Succeed())
	})

	It("releases, deallocates and deletes the generated claim when its pod is done", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		createTemplate(ctx, ns, "gpu-template")
		p := createPod(ctx, ns, "job", "", fromTemplate("gpu-template"))
		claim := expectGeneratedClaim(ctx, p)

		By("the scheduler allocating and reserving the claim for the pod: the controller keeps it")
		allocate(ctx, claim, p)
		Consistently(func(g Gomega) {
			got, err := getClaim(ctx, ns, claim.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ReservedFor).To(HaveLen(1))
			g.Expect(got.Status.Allocation).NotTo(BeNil())
		}).Should(Succeed())

		By("the kubelet finishing the pod: the claim goes, though the pod stays")
		finish(ctx, p)
		Eventually(func() bool {
			_, err := getClaim(ctx, ns, claim.Name)
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})).To(Succeed())

		By("the pod done: its claim is not made again")
		Consistently(func(g Gomega) {
			claims := &resourceapi.ResourceClaimList{}
			g.Expect(env.Client.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
			g.Expect(claims.Items).To(BeEmpty())
		}).Should(Succeed())
	})

	It("deletes the scheduler's extended-resource claim, named in the pod's status, when the pod is done", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		gpu := corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ext"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}}},
		}
		Expect(env.Client.Create(ctx, p)).To(Succeed())

		By("the scheduler's claim for the extended resource, controlled by the pod, allocated and reserved, named in the pod's status")
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ext-gpu",
				Annotations:     map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}}},
			Spec: claimSpec(),
		}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		allocate(ctx, claim, p)
		Eventually(func() error {
			got := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			got.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{
				ResourceClaimName: claim.Name,
				RequestMappings:   []corev1.ContainerExtendedResourceRequest{{ContainerName: "app", ResourceName: "example.com/gpu", RequestName: "gpu"}},
			}
			return env.Client.Status().Update(ctx, got)
		}).Should(Succeed())
		Eventually(func() float64 {
			return testenv.Sample("dynamic_resource_allocation_resource_claims", map[string]string{"allocated": "true", "admin_access": "false", "source": "extended_resource"})
		}).Should(BeNumerically(">=", 1))
		Consistently(func() error {
			_, err := getClaim(ctx, ns, claim.Name)
			return err
		}).Should(Succeed(), "kept while the pod may run")

		finish(ctx, p)
		Eventually(func() bool {
			_, err := getClaim(ctx, ns, claim.Name)
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("removes a deleted pod's reservation of a user's claim and deallocates it, keeping the claim", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: claimSpec()}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		a := createPod(ctx, ns, "a", "", named("shared"))
		b := createPod(ctx, ns, "b", "", named("shared"))
		allocate(ctx, claim, a)
		Eventually(func() error {
			got, err := getClaim(ctx, ns, "shared")
			if err != nil {
				return err
			}
			got.Status.ReservedFor = append(got.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: b.Name, UID: b.UID})
			return env.Client.Status().Update(ctx, got)
		}).Should(Succeed())

		By("pod a deleted (never scheduled, so gone at once): b's reservation stays, the claim allocated")
		Expect(env.Client.Delete(ctx, a)).To(Succeed())
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, ns, "shared")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ReservedFor).To(Equal([]resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "b", UID: b.UID}}))
			g.Expect(got.Status.Allocation).NotTo(BeNil())
			g.Expect(got.Finalizers).To(ContainElement(resourceapi.Finalizer))
		}).Should(Succeed())

		By("pod b done: no consumer left, the claim deallocated and its finalizer removed, but kept")
		finish(ctx, b)
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, ns, "shared")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ReservedFor).To(BeEmpty())
			g.Expect(got.Status.Allocation).To(BeNil())
			g.Expect(got.Finalizers).NotTo(ContainElement(resourceapi.Finalizer))
		}).Should(Succeed())
		Consistently(func() error {
			_, err := getClaim(ctx, ns, "shared")
			return err
		}).Should(Succeed())
	})

	It("removes the reservation of a pod it never saw, read live, and lets a deleted allocated claim go", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Spec: claimSpec()}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		ghost := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ghost", UID: "00000000-0000-0000-0000-000000000001"}}
		allocate(ctx, claim, ghost)
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, ns, "orphan")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ReservedFor).To(BeEmpty())
			g.Expect(got.Status.Allocation).To(BeNil())
			g.Expect(got.Finalizers).NotTo(ContainElement(resourceapi.Finalizer))
		}).Should(Succeed())

		By("allocated again without consumers, then deleted: the allocation and the finalizer go, and so does the claim")
		allocate(ctx, claim, nil)
		Consistently(func(g Gomega) {
			got, err := getClaim(ctx, ns, "orphan")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Allocation).NotTo(BeNil(), "unused but not released: kept allocated")
		}).Should(Succeed())
		Expect(env.Client.Delete(ctx, claim)).To(Succeed())
		Eventually(func() bool {
			_, err := getClaim(ctx, ns, "orphan")
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("reserves an allocated claim for a pod already on a node", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "direct"}, Spec: claimSpec()}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		allocate(ctx, claim, nil)
		p := createPod(ctx, ns, "bound", "node-1", named("direct"))
		Eventually(func(g Gomega) {
			got, err := getClaim(ctx, ns, "direct")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.ReservedFor).To(Equal([]resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "bound", UID: p.UID}}))
		}).Should(Succeed())
	})

	It("reports a missing template in a Warning Event, and creates the claim once the template exists", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		p := createPod(ctx, ns, "waiting", "", fromTemplate("later"))
		expectEvent(ctx, p, "FailedResourceClaimCreation",
			`PodResourceClaim gpu: resource claim template "later": resourceclaimtemplate.resource.k8s.io "later" not found`)
		createTemplate(ctx, ns, "later")
		expectGeneratedClaim(ctx, p)
	})

	It("counts claim creates and the claims by source in upstream's metrics", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "claim")
		byPod := func(status string) map[string]string {
			return map[string]string{"status": status, "admin_access": "false", "owner_api_group": "", "owner_api_kind": "Pod"}
		}
		created := testenv.Sample("dynamic_resource_allocation_resourceclaim_creates_total", byPod("success"))
		failed := testenv.Sample("dynamic_resource_allocation_resourceclaim_creates_total", byPod("failure"))
		createTemplate(ctx, ns, "gpu-template")

		By("the API server refusing claim creates: a failure")
		lift := denyClaimCreates(ctx, ns)
		p := createPod(ctx, ns, "metered", "", fromTemplate("gpu-template"))
		Eventually(func() float64 {
			return testenv.Sample("dynamic_resource_allocation_resourceclaim_creates_total", byPod("failure"))
		}).Should(BeNumerically(">", failed))

		By("lifted: the retry creates it, a success; the cache's claims counted by source")
		lift()
		expectGeneratedClaim(ctx, p)
		Eventually(func() float64 {
			return testenv.Sample("dynamic_resource_allocation_resourceclaim_creates_total", byPod("success"))
		}).Should(Equal(created + 1))
		Expect(testenv.LabelNames("dynamic_resource_allocation_resourceclaim_creates_total")).To(Equal([]string{"admin_access", "owner_api_group", "owner_api_kind", "status"}))
		Eventually(func() float64 {
			return testenv.Sample("dynamic_resource_allocation_resource_claims", map[string]string{"allocated": "false", "admin_access": "false", "source": "resource_claim_template"})
		}).Should(BeNumerically(">=", 1))
		Expect(testenv.LabelNames("dynamic_resource_allocation_resource_claims")).To(Equal([]string{"admin_access", "allocated", "source"}))
	})
})

// denyClaimCreates makes the API server refuse ResourceClaim creates in the namespace, by a
// ValidatingAdmissionPolicy, until the returned function lifts it.
func denyClaimCreates(ctx context.Context, ns string) (lift func()) {
	GinkgoHelper()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-claims-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"resourceclaims"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "denied by the test"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	Expect(env.Client.Create(ctx, policy)).To(Succeed())
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	Eventually(func() error {
		probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}, Spec: claimSpec()}
		err := env.Client.Create(ctx, probe)
		if err == nil {
			_ = env.Client.Delete(ctx, probe)
		}
		return err
	}).Should(MatchError(ContainSubstring("denied by the test")))
	return func() {
		GinkgoHelper()
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, policy))).To(Succeed())
		Eventually(func() error {
			probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}, Spec: claimSpec()}
			if err := env.Client.Create(ctx, probe); err != nil {
				return err
			}
			return env.Client.Delete(ctx, probe)
		}).Should(Succeed())
	}
}
