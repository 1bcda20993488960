package nodelifecycle_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// freezableLeases is the controller's Lease cache, except that a frozen Lease keeps the
// copy it had when frozen, as a cache whose watch is stuck would.
type freezableLeases struct {
	client.Reader
	mu     sync.Mutex
	frozen map[string]*coordinationv1.Lease
}

func (f *freezableLeases) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	f.mu.Lock()
	frozen := f.frozen[key.Name]
	f.mu.Unlock()
	if lease, ok := obj.(*coordinationv1.Lease); ok && frozen != nil {
		frozen.DeepCopyInto(lease)
		return nil
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}

// freeze keeps the controller's view of the node's Lease as the cache has it now.
func (f *freezableLeases) freeze(node string) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{}
	Expect(f.Reader.Get(context.Background(), types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: node}, lease)).To(Succeed())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen[node] = lease
	return lease
}

func (f *freezableLeases) thaw(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.frozen, node)
}

var _ = Describe("node-lifecycle-controller's lease circuit breaker", func() {
	ctx := context.Background()

	It("keeps a node whose Lease the cache shows expired but the API server shows renewed, and still marks a node that stopped", func() {
		prefix := fmt.Sprintf("cb%d", time.Now().UnixNano()%1_000_000)
		// A healthy node keeps the zone from counting as wholly down (which taints nothing).
		stale, dead, healthy := prefix+"-stale-cache", prefix+"-dead", prefix+"-healthy"
		for _, name := range []string{stale, dead, healthy} {
			node := kubelet.register(name, nil)
			DeferCleanup(func() {
				leaseCache.thaw(name)
				kubelet.setAlive(false, name)
				Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed())
			})
		}
		Eventually(func(g Gomega) {
			g.Expect(taintKeys(getNode(g, stale), corev1.TaintEffectNoSchedule)).To(BeEmpty())
			g.Expect(taintKeys(getNode(g, dead), corev1.TaintEffectNoSchedule)).To(BeEmpty())
		}).Should(Succeed())

		// NodeControllerLeaseCircuitBreaker is on by default, as upstream's.
		Expect(controller.LeaseCircuitBreaker).To(BeTrue())
		// The breaker knows how far the real Lease cache has synced (its informer's store).
		Expect(controller.LeaseCacheVersion).NotTo(BeNil())
		Expect(controller.LeaseCacheVersion()).NotTo(BeEmpty())

		// The controller's cache stops seeing the stale-cache node's renewals; its kubelet
		// goes on renewing in the API server.
		frozen := leaseCache.freeze(stale)
		// The dead node renews once more after that, then stops for good: its last
		// renewal is later than the frozen one, so its grace period runs out last.
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: dead}, lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime.After(frozen.Spec.RenewTime.Time)).To(BeTrue())
		}).Should(Succeed())
		kubelet.setAlive(false, dead)

		// The positive witness: the node that stopped is Unknown and tainted.
		Eventually(func(g Gomega) {
			n := getNode(g, dead)
			g.Expect(readyOf(n).Status).To(Equal(corev1.ConditionUnknown))
			g.Expect(taintKeys(n, corev1.TaintEffectNoExecute)).To(ConsistOf(corev1.TaintNodeUnreachable))
		}, 15*time.Second, 200*time.Millisecond).Should(Succeed())
		// Its grace period ran out after the other's: the stale-cache node was judged and
		// kept.
		n := getNode(Default, stale)
		Expect(readyOf(n).Status).To(Equal(corev1.ConditionTrue))
		Expect(n.Spec.Taints).To(BeEmpty())
		Consistently(func(g Gomega) {
			n := getNode(g, stale)
			g.Expect(readyOf(n).Status).To(Equal(corev1.ConditionTrue))
			g.Expect(n.Spec.Taints).To(BeEmpty())
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})
