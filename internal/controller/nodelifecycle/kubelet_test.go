package nodelifecycle_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeKubelet plays the kubelets of the test's nodes: it registers a node with a Ready
// condition and renews the node's Lease every 500ms, all nodes at the same instant, until
// told to stop.
type fakeKubelet struct {
	mu    sync.Mutex
	alive map[string]bool
	stop  chan struct{}
	done  chan struct{}
}

func startFakeKubelet() *fakeKubelet {
	k := &fakeKubelet{alive: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(k.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-tick.C:
				k.renewAll()
			}
		}
	}()
	return k
}

func (k *fakeKubelet) close() {
	close(k.stop)
	<-k.done
}

func (k *fakeKubelet) renewAll() {
	k.mu.Lock()
	var names []string
	for n, ok := range k.alive {
		if ok {
			names = append(names, n)
		}
	}
	k.mu.Unlock()
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	for _, n := range names {
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: n}, lease); err != nil {
			continue
		}
		lease.Spec.RenewTime = &now
		_ = env.Client.Update(ctx, lease)
	}
}

// register creates a ready node with the given labels and a Lease the kubelet renews.
func (k *fakeKubelet) register(name string, labels map[string]string) *corev1.Node {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	Expect(env.Client.Create(ctx, node)).To(Succeed())
	reportReady(node)
	now := metav1.NewMicroTime(time.Now())
	Expect(env.Client.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now},
	})).To(Succeed())
	k.setAlive(true, name)
	return node
}

// setAlive starts or stops the renewals of the named nodes together: a renewal pass sees all
// of them alive or none, so nodes stopped together have the same last renewal.
func (k *fakeKubelet) setAlive(alive bool, names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, name := range names {
		k.alive[name] = alive
	}
}

// reportReady writes the node status a healthy kubelet posts.
func reportReady(node *corev1.Node) {
	ctx := context.Background()
	Eventually(func() error {
		if err := env.Client.Get(ctx, types.NamespacedName{Name: node.Name}, node); err != nil {
			return err
		}
		now := metav1.Now()
		node.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now},
		}
		return env.Client.Status().Update(ctx, node)
	}).Should(Succeed())
}

func getNode(g Gomega, name string) *corev1.Node {
	node := &corev1.Node{}
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Name: name}, node)).To(Succeed())
	return node
}

func taintKeys(node *corev1.Node, effect corev1.TaintEffect) []string {
	var keys []string
	for _, t := range node.Spec.Taints {
		if t.Effect == effect {
			keys = append(keys, t.Key)
		}
	}
	return keys
}

func readyOf(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
