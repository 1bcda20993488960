package replicaset_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/controller/replicaset"
	"github.com/kcm/kcm/internal/track"
)

// The controller's own view of a ReplicaSet, as /debug/controllers/<controller>/objects/...
// serves it (the handler the leader mounts; this suite's manager serves no port).
var _ = Describe("replicaset-controller's per-object view", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "rs-view") })

	name := replicaset.ReplicaSetKind.ControllerName
	view := func(g Gomega, key string) (*track.View, int) {
		rec := httptest.NewRecorder()
		track.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+name+"/objects/"+key, nil))
		if rec.Code != http.StatusOK {
			return nil, rec.Code
		}
		v := &track.View{}
		g.Expect(json.Unmarshal(rec.Body.Bytes(), v)).To(Succeed())
		return v, rec.Code
	}

	It("shows a sync refused by a quota backing off, its error, then its success, and is dropped with the object", func() {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
		}
		Expect(env.Client.Create(ctx, quota)).To(Succeed())
		// No resourcequota-controller runs here: publish the quota's usage ourselves.
		quota.Status = corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
		}
		Expect(env.Client.Status().Update(ctx, quota)).To(Succeed())
		key := ns + "/refused"
		_, code := view(Default, key)
		Expect(code).To(Equal(http.StatusNotFound), "a key never seen")

		rs := newReplicaSet(ns, "refused", 1)
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		By("the create refused: backing off, with the retries, the next attempt and the sync's error")
		Eventually(func(g Gomega) {
			v, code := view(g, key)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(v.Controller).To(Equal(name))
			g.Expect(v.Queue.State).To(Equal(track.BackingOff))
			g.Expect(v.Queue.Retries).To(BeNumerically(">=", 1))
			g.Expect(v.Queue.NextAttempt).NotTo(BeNil())
			g.Expect(*v.Queue.NextAttempt).To(BeTemporally(">", time.Now()))
			g.Expect(v.Syncs).NotTo(BeEmpty())
			last := v.Syncs[len(v.Syncs)-1]
			g.Expect(last.Result).To(Equal(track.Error))
			g.Expect(last.Error).To(ContainSubstring("exceeded quota"))
			g.Expect(len(v.Syncs)).To(BeNumerically("<=", 4), "a ring of 4")
		}).Should(Succeed())

		By("the quota raised: the retry succeeds and the failures are forgotten")
		Eventually(func() error {
			q := &corev1.ResourceQuota{}
			if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pods"}, q); err != nil {
				return err
			}
			q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1")
			if err := env.Client.Update(ctx, q); err != nil {
				return err
			}
			q.Status.Hard[corev1.ResourcePods] = resource.MustParse("1")
			return env.Client.Status().Update(ctx, q)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			v, code := view(g, key)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(v.Queue.Retries).To(BeZero())
			g.Expect(v.Syncs[len(v.Syncs)-1].Result).To(Equal(track.Success))
		}, time.Minute).Should(Succeed())

		By("the ReplicaSet deleted: its view is dropped")
		Expect(env.Client.Delete(ctx, rs)).To(Succeed())
		Eventually(func(g Gomega) int { _, code := view(g, key); return code }).Should(Equal(http.StatusNotFound))
	})

	It("shows the creations a burst still expects to observe", func() {
		Expect(env.Client.Create(ctx, newReplicaSet(ns, "burst", 300))).To(Succeed())
		// The slow-start batches of a 300-pod burst keep creations expected for a while; the
		// view shows them while the watch has not delivered every pod of the batch.
		Eventually(func(g Gomega) {
			v, code := view(g, ns+"/burst")
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(v.Expectations).NotTo(BeNil())
			g.Expect(v.Expectations.Creations).To(BeNumerically(">", 0))
			g.Expect(v.Expectations.Since).To(BeTemporally("~", time.Now(), time.Minute))
		}).WithPolling(5 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(300)) }, 2*time.Minute, time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			v, code := view(g, ns+"/burst")
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(v.Expectations).To(BeNil(), "every creation observed")
		}).Should(Succeed())
	})
})
