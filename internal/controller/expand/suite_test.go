package expand_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/expand"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestExpandController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-expander-controller suite")
}

// class allows expansion: the API server's PersistentVolumeClaimResize admission refuses a
// larger request otherwise.
const class = "expandable"

var _ = BeforeSuite(func(ctx SpecContext) {
	env = testenv.MustStart([]string{expand.ControllerName})
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: class},
		Provisioner:          "csi.example.com",
		AllowVolumeExpansion: ptr.To(true),
	}
	Expect(env.Client.Create(ctx, sc)).To(Succeed())
})

// boundClaim creates a 1Gi volume of the source and a claim bound to it, as the binder leaves
// them (no binder runs here: the test plays it).
func boundClaim(ctx context.Context, ns, name string, src corev1.PersistentVolumeSource, mode corev1.PersistentVolumeMode) (*corev1.PersistentVolumeClaim, string) {
	GinkgoHelper()
	one := resource.MustParse("1Gi")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			VolumeMode:       ptr.To(mode),
			VolumeName:       ns + "-" + name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: one}},
		},
	}
	Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvc.Spec.VolumeName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: one},
			AccessModes:            pvc.Spec.AccessModes,
			StorageClassName:       class,
			VolumeMode:             ptr.To(mode),
			PersistentVolumeSource: src,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: ns, Name: name, UID: pvc.UID},
		},
	}
	Expect(env.Client.Create(ctx, pv)).To(Succeed())
	pvc.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: pvc.Spec.AccessModes,
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: one},
	}
	Expect(env.Client.Status().Update(ctx, pvc)).To(Succeed())
	return pvc, pv.Name
}

// request raises the claim's storage request, as a user resizing it.
func request(ctx context.Context, pvc *corev1.PersistentVolumeClaim, size string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := getClaim(ctx, pvc.Namespace, pvc.Name)(g)
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		g.Expect(env.Client.Update(ctx, c)).To(Succeed())
	}).Should(Succeed())
}

func getClaim(ctx context.Context, ns, name string) func(g Gomega) *corev1.PersistentVolumeClaim {
	return func(g Gomega) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)).To(Succeed())
		return c
	}
}

func getVolume(ctx context.Context, name string) func(g Gomega) *corev1.PersistentVolume {
	return func(g Gomega) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, v)).To(Succeed())
		return v
	}
}

// claimEvents lists the Events about the claim as "Type Reason: note".
func claimEvents(ctx context.Context, ns, name string) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "PersistentVolumeClaim" && e.Regarding.Name == name {
				seen = append(seen, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Note))
			}
		}
		return seen
	}
}

func storage(l corev1.ResourceList) string {
	q := l[corev1.ResourceStorage]
	return q.String()
}

func conditionTypes(c *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeClaimConditionType {
	var types []corev1.PersistentVolumeClaimConditionType
	for _, cond := range c.Status.Conditions {
		types = append(types, cond.Type)
	}
	return types
}

func csiSource(name string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: name}}
}

func flexSource() corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{FlexVolume: &corev1.FlexPersistentVolumeSource{Driver: "example.com/flex"}}
}

// denyVolumeWrites makes the API server refuse every update (a patch included) of the named
// volume, by a ValidatingAdmissionPolicy, until the returned function lifts it.
func denyVolumeWrites(ctx context.Context, name string) (lift func(context.Context)) {
	GinkgoHelper()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumes"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", name), Message: "denied by the test"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	Expect(env.Client.Create(ctx, policy)).To(Succeed())
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	Eventually(func(g Gomega) error {
		v := getVolume(ctx, name)(g)
		metav1.SetMetaDataLabel(&v.ObjectMeta, "probe", "yes")
		return env.Client.Update(ctx, v)
	}).Should(MatchError(ContainSubstring("denied by the test")), "the API server enforces the policy")
	return func(ctx context.Context) {
		GinkgoHelper()
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, policy))).To(Succeed())
	}
}

var _ = Describe("persistentvolume-expander-controller", func() {
	It("leaves a CSI volume to the driver's external resizer, with upstream's Event and no annotation", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "csi")
		pvc, _ := boundClaim(ctx, ns, "data", csiSource("data"), corev1.PersistentVolumeFilesystem)
		request(ctx, pvc, "2Gi")
		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(
			"Normal ExternalExpanding: waiting for an external controller to expand this PVC"))
		c := getClaim(ctx, ns, "data")(Default)
		Expect(c.Annotations).NotTo(HaveKey(expand.AnnResizer))
		Expect(c.Status.AllocatedResourceStatuses).To(BeEmpty())
	})

	It("hands a migrated in-tree volume to its CSI driver's resizer through the claim's annotation", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "migrated")
		src := corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}
		pvc, pvName := boundClaim(ctx, ns, "data", src, corev1.PersistentVolumeFilesystem)
		Consistently(getClaim(ctx, ns, "data")).WithTimeout(testenv.ConsistentlyDuration).
			Should(WithTransform(func(c *corev1.PersistentVolumeClaim) map[string]string { return c.Annotations }, Not(HaveKey(expand.AnnResizer))),
				"no annotation before the claim asks for more")

		request(ctx, pvc, "2Gi")
		Eventually(func(g Gomega) map[string]string { return getClaim(ctx, ns, "data")(g).Annotations }).
			Should(HaveKeyWithValue(expand.AnnResizer, "ebs.csi.aws.com"))
		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(
			"Normal ExternalExpanding: CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc"))
		// The resizer's own work is not the controller's: the volume keeps its size.
		Expect(storage(getVolume(ctx, pvName)(Default).Spec.Capacity)).To(Equal("1Gi"))
	})

	It("expands a FlexVolume for the kubelet: volume size, claim resize status, pre-resize capacity, then drops it when the node is done", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "flex")
		pvc, pvName := boundClaim(ctx, ns, "data", flexSource(), corev1.PersistentVolumeFilesystem)
		request(ctx, pvc, "2Gi")

		Eventually(func(g Gomega) {
			v := getVolume(ctx, pvName)(g)
			g.Expect(storage(v.Spec.Capacity)).To(Equal("2Gi"))
			g.Expect(v.Annotations).To(HaveKeyWithValue(expand.AnnPreResizeCapacity, "1Gi"))
			c := getClaim(ctx, ns, "data")(g)
			g.Expect(c.Annotations).To(HaveKeyWithValue(expand.AnnResizer, "example.com/flex"))
			g.Expect(storage(c.Status.AllocatedResources)).To(Equal("2Gi"))
			g.Expect(c.Status.AllocatedResourceStatuses).To(HaveKeyWithValue(corev1.ResourceStorage, corev1.PersistentVolumeClaimNodeResizePending))
			g.Expect(storage(c.Status.Capacity)).To(Equal("1Gi"), "the node has not grown the file system yet")
			g.Expect(conditionTypes(c)).To(ConsistOf(corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimFileSystemResizePending))
			for _, cond := range c.Status.Conditions {
				g.Expect(cond.Status).To(Equal(corev1.ConditionTrue))
				if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending {
					g.Expect(cond.Message).To(Equal("Waiting for user to (re-)start a pod to finish file system resize of volume on node."))
				}
			}
		}).Should(Succeed())

		By("the kubelet finishing the file system resize")
		Eventually(func(g Gomega) {
			c := getClaim(ctx, ns, "data")(g)
			c.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
			c.Status.AllocatedResourceStatuses = nil
			c.Status.Conditions = nil
			g.Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) map[string]string { return getVolume(ctx, pvName)(g).Annotations }).
			ShouldNot(HaveKey(expand.AnnPreResizeCapacity))
		Expect(storage(getVolume(ctx, pvName)(Default).Spec.Capacity)).To(Equal("2Gi"))
	})

	It("finishes a FlexVolume block volume's expansion itself: no file system to grow", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "block")
		pvc, pvName := boundClaim(ctx, ns, "data", flexSource(), corev1.PersistentVolumeBlock)
		request(ctx, pvc, "3Gi")
		Eventually(func(g Gomega) {
			c := getClaim(ctx, ns, "data")(g)
			g.Expect(storage(c.Status.Capacity)).To(Equal("3Gi"))
			g.Expect(storage(c.Status.AllocatedResources)).To(Equal("3Gi"))
			g.Expect(c.Status.AllocatedResourceStatuses).To(BeEmpty())
			g.Expect(c.Status.Conditions).To(BeEmpty())
		}).Should(Succeed())
		v := getVolume(ctx, pvName)(Default)
		Expect(storage(v.Spec.Capacity)).To(Equal("3Gi"))
		Expect(v.Annotations).NotTo(HaveKey(expand.AnnPreResizeCapacity))
		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(
			fmt.Sprintf("Normal VolumeResizeSuccessful: ExpandVolume succeeded for volume %s/data", ns)))
	})

	It("reports a failed expansion as VolumeResizeFailed and resumes to the allocated size", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "fail")
		pvc, pvName := boundClaim(ctx, ns, "data", flexSource(), corev1.PersistentVolumeFilesystem)
		lift := denyVolumeWrites(ctx, pvName)
		DeferCleanup(func(ctx SpecContext) { lift(ctx) })
		request(ctx, pvc, "2Gi")

		Eventually(claimEvents(ctx, ns, "data")).Should(ContainElement(And(
			HavePrefix(fmt.Sprintf("Warning VolumeResizeFailed: error updating pv for pvc %s/data: ", ns)),
			ContainSubstring("denied by the test"))))
		c := getClaim(ctx, ns, "data")(Default)
		Expect(c.Status.AllocatedResourceStatuses).To(HaveKeyWithValue(corev1.ResourceStorage, corev1.PersistentVolumeClaimControllerResizeInProgress))
		Expect(storage(c.Status.AllocatedResources)).To(Equal("2Gi"))
		Expect(conditionTypes(c)).To(ConsistOf(corev1.PersistentVolumeClaimResizing))
		Expect(storage(getVolume(ctx, pvName)(Default).Spec.Capacity)).To(Equal("1Gi"))

		By("the user asking for more while it failed, then the volume writable again")
		request(ctx, pvc, "3Gi")
		lift(ctx)
		Eventually(func(g Gomega) {
			g.Expect(storage(getVolume(ctx, pvName)(g).Spec.Capacity)).To(Equal("2Gi"), "the size already allocated, not the new request")
			c := getClaim(ctx, ns, "data")(g)
			g.Expect(c.Status.AllocatedResourceStatuses).To(HaveKeyWithValue(corev1.ResourceStorage, corev1.PersistentVolumeClaimNodeResizePending))
		}).Should(Succeed())
	})
})
