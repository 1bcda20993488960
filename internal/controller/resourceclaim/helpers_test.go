package resourceclaim_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
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
	GinkgoHelper()
	p := testenv.NewPod(ns, name, node)
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{pc}
	return env.CreatePod(ctx, p)
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
