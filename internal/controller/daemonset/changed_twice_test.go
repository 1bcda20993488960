package daemonset_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/daemonset"
	"github.com/kcm/kcm/internal/setup"
)

// The shape of upstream's "ReplicaSet Replace and Patch" conformance spec for a DaemonSet: a
// change, and at once a patch with a label and another template, which lands while the
// controller writes a status computed from its cached copy of the first change. A DaemonSet's
// sync is quick, so the spec holds that status write until its patch has landed, making the
// interleaving certain; the status write must not take the label back.
var _ = Describe("a DaemonSet changed twice in quick succession", func() {
	var held *holdingClient
	AfterEach(func() {
		if held != nil {
			held.release() // a failed spec must not leave the controller's worker waiting
		}
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager([]string{daemonset.ControllerName}, "--kube-api-qps=200", "--kube-api-burst=300")).To(Succeed())
	})

	It("keeps the patched label and reports the patched pods ready and available", func() {
		ctx := context.Background()
		held = newHoldingClient()
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManagerWith([]string{daemonset.ControllerName}, []string{"--kube-api-qps=200", "--kube-api-burst=300"},
			setup.OverrideFor(daemonset.ControllerName, func(r *daemonset.Reconciler) {
				held.Client = r.Client
				r.Client = held
			}))).To(Succeed())
		ns := env.Namespace(ctx, "ds-twice")
		pool := newPool()
		for range 3 {
			createNode(ctx, nodeName("t"), pool)
		}
		ds := newDaemonSet(ns, "twice", pool)
		rollingUpdate(ds, 3, 0)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			g.Expect(getDaemonSet(ctx, g, ds).Status.NumberAvailable).To(BeEquivalentTo(3))
		}).Should(Succeed())

		By("changing the image, and patching a label and another image while the status of the change is being written")
		held.hold(ds.Name)
		setImage(ctx, ds, "registry.k8s.io/pause:3.9")
		Eventually(held.started).Should(BeClosed())
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"labels": map[string]string{"test-ds": "patched"}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []map[string]any{{"name": "app", "image": "registry.k8s.io/pause:3.10.1"}},
			}}},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Patch(ctx, ds, client.RawPatch(types.StrategicMergePatchType, patch))).To(Succeed())
		held.release()

		Eventually(func(g Gomega) {
			kubelet(ctx, ns, true)
			for _, p := range livePods(ctx, g, ns) {
				g.Expect(p.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10.1"), "pod %s", p.Name)
			}
			got := getDaemonSet(ctx, g, ds)
			g.Expect(got.Labels).To(HaveKeyWithValue("test-ds", "patched"))
			s := got.Status
			g.Expect(s.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(s.UpdatedNumberScheduled).To(BeEquivalentTo(3))
			g.Expect(s.NumberReady).To(BeEquivalentTo(3))
			g.Expect(s.NumberAvailable).To(BeEquivalentTo(3))
		}).Should(Succeed())
	})
})

// holdingClient is the controller's client, but the first status write of the held object
// after hold waits, once started is closed, until release.
type holdingClient struct {
	client.Client
	name             atomic.Pointer[string]
	once             sync.Once
	started, proceed chan struct{}
	release          func()
}

func newHoldingClient() *holdingClient {
	c := &holdingClient{started: make(chan struct{}), proceed: make(chan struct{})}
	c.release = sync.OnceFunc(func() { close(c.proceed) })
	return c
}

func (c *holdingClient) hold(name string) { c.name.Store(&name) }

func (c *holdingClient) Status() client.SubResourceWriter {
	return holdingWriter{SubResourceWriter: c.Client.Status(), c: c}
}

type holdingWriter struct {
	client.SubResourceWriter
	c *holdingClient
}

func (w holdingWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if name := w.c.name.Load(); name != nil && *name == obj.GetName() {
		w.c.once.Do(func() {
			close(w.c.started)
			<-w.c.proceed
		})
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}
