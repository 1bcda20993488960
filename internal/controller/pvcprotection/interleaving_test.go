package pvcprotection_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/pvcprotection"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("persistentvolumeclaim-protection-controller under interleavings", func() {
	It("sets Unused when the pod fails while the cache still shows the claim before its Unused=False write", func(ctx SpecContext) {
		stale := &staleClaims{}
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			Expect(env.StartManager([]string{pvcprotection.ControllerName})).To(Succeed())
		})
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManagerWith([]string{pvcprotection.ControllerName}, nil,
			setup.OverrideFor[pvcprotection.Reconciler](pvcprotection.ControllerName, func(r *pvcprotection.Reconciler) {
				stale.Client = r.Client
				r.Client = stale
			}))).To(Succeed())

		ns := env.Namespace(ctx, "pvcp")
		pvc := createClaim(ctx, ns, "data", nil)
		Eventually(func() error {
			got, err := getClaim(ctx, pvc)()
			if err != nil {
				return err
			}
			got.Status.Phase = corev1.ClaimBound
			return env.Client.Status().Update(ctx, got)
		}).Should(Succeed())
		expectUnused(ctx, pvc, corev1.ConditionTrue, "NoPodsUsingPVC", "No pods are currently referencing this PVC")

		By("the controller's cache keeping the claim as it is now (Unused) from here on")
		cur, err := getClaim(ctx, pvc)()
		Expect(err).NotTo(HaveOccurred())
		stale.freeze(cur)
		p := createPod(ctx, ns, "web", claimVolume("data"), false)
		expectUnused(ctx, pvc, corev1.ConditionFalse, "PodUsingPVC", "A pod is currently referencing this PVC")

		By("the pod failing: the sync reads the claim still Unused, as it was before its last write")
		env.SetPodStatus(ctx, p, testenv.Phase(corev1.PodFailed, ""))
		expectUnused(ctx, pvc, corev1.ConditionTrue, "NoPodsUsingPVC", "No pods are currently referencing this PVC")
		Expect(stale.served()).To(BeNumerically(">=", 2), "the frozen claim was not read by both syncs")
	})
})

// staleClaims is a cache that, once frozen, lists one claim as it was.
type staleClaims struct {
	client.Client
	mu      sync.Mutex
	claim   *corev1.PersistentVolumeClaim
	servedN int
}

func (s *staleClaims) freeze(pvc *corev1.PersistentVolumeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claim = pvc.DeepCopy()
}

func (s *staleClaims) served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servedN
}

func (s *staleClaims) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	claims, ok := list.(*corev1.PersistentVolumeClaimList)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range claims.Items {
		if s.claim != nil && client.ObjectKeyFromObject(&claims.Items[i]) == client.ObjectKeyFromObject(s.claim) {
			claims.Items[i] = *s.claim.DeepCopy()
			s.servedN++
		}
	}
	return nil
}
