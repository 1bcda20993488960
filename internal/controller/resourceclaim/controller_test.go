package resourceclaim_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

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
		env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodSucceeded, ""))
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

		env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodSucceeded, ""))
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
		env.SetPodStatus(ctx, b, testenv.Phase(corev1.PodSucceeded, ""))
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
		env.ExpectEvent(ctx, p, testenv.Event{Type: corev1.EventTypeWarning, Reason: "FailedResourceClaimCreation",
			Message: `PodResourceClaim gpu: resource claim template "later": resourceclaimtemplate.resource.k8s.io "later" not found`,
			Source:  "resource_claim"})
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
