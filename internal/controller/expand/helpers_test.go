package expand_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

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
	return testenv.Get[corev1.PersistentVolumeClaim](ctx, env, ns, name)
}

func getVolume(ctx context.Context, name string) func(g Gomega) *corev1.PersistentVolume {
	return testenv.Get[corev1.PersistentVolume](ctx, env, "", name)
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
