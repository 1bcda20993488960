package garbagecollector_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/garbagecollector"
)

var _ = Describe("garbage-collector-controller", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = env.Namespace(ctx, "gc")
	})

	It("collects a deleted Deployment's ReplicaSet and pods in the background", func() {
		d := deployment(ns, "web", 3)
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(listReplicaSets(g, ns)).To(HaveLen(1))
			g.Expect(listPods(g, ns)).To(HaveLen(3))
		}).Should(Succeed())

		Expect(env.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(listReplicaSets(g, ns)).To(BeEmpty())
			g.Expect(listPods(g, ns)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("deletes in the foreground: blocking dependents first, the owner last", func() {
		d := deployment(ns, "web", 2)
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		var held corev1.Pod
		Eventually(func(g Gomega) {
			pods := listPods(g, ns)
			g.Expect(pods).To(HaveLen(2))
			held = pods[0]
		}).Should(Succeed())
		rs := &listReplicaSets(Default, ns)[0]
		hold(ctx, &held)
		// A dependent that does not block its owner's deletion, held too.
		extra := configMap(ctx, ns, "extra", refTo(d, false))
		hold(ctx, extra)

		Expect(env.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		By("deleting the tree down to the held pod, while the owners wait")
		Eventually(func(g Gomega) {
			g.Expect(current(g, &held).DeletionTimestamp).NotTo(BeNil())
			g.Expect(listPods(g, ns)).To(HaveLen(1))
			g.Expect(current(g, rs).DeletionTimestamp).NotTo(BeNil())
			g.Expect(current(g, rs).Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(exists(g, d)).To(BeTrue(), "the Deployment went before its pods")
			g.Expect(exists(g, rs)).To(BeTrue(), "the ReplicaSet went before its pods")
			g.Expect(current(g, d).Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents))
		}).Should(Succeed())

		By("letting the pod go")
		release(ctx, &held)
		Eventually(func(g Gomega) {
			dGone := !exists(g, d)
			// Once the Deployment is gone, the ReplicaSet must be gone already.
			if dGone {
				g.Expect(exists(g, rs)).To(BeFalse(), "the Deployment went before its ReplicaSet")
			}
			g.Expect(dGone).To(BeTrue())
		}).Should(Succeed())
		By("not waiting for a dependent without blockOwnerDeletion")
		Expect(current(Default, extra).DeletionTimestamp).NotTo(BeNil())
		release(ctx, extra)
		Eventually(func(g Gomega) { g.Expect(exists(g, extra)).To(BeFalse()) }).Should(Succeed())
	})

	It("orphans: the owner's references go from its dependents, then its finalizer", func() {
		owner := configMap(ctx, ns, "owner")
		other := configMap(ctx, ns, "other")
		only := configMap(ctx, ns, "only", refTo(owner, true))
		shared := configMap(ctx, ns, "shared", refTo(owner, true), refTo(other, false))

		Expect(env.Client.Delete(ctx, owner, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(exists(g, owner)).To(BeFalse())
			g.Expect(current(g, only).OwnerReferences).To(BeEmpty())
			g.Expect(ownerUIDs(current(g, shared))).To(ConsistOf(other.UID))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(exists(g, only)).To(BeTrue())
			g.Expect(exists(g, shared)).To(BeTrue())
		}).Should(Succeed())
	})

	It("deletes a dependent with several owners only when all are gone", func() {
		a := configMap(ctx, ns, "a")
		b := configMap(ctx, ns, "b")
		dep := configMap(ctx, ns, "dep", refTo(a, false), refTo(b, false))

		Expect(env.Client.Delete(ctx, a)).To(Succeed())
		// The reference to the deleted owner goes; the dependent stays for the other.
		Eventually(func(g Gomega) {
			g.Expect(ownerUIDs(current(g, dep))).To(ConsistOf(b.UID))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(exists(g, dep)).To(BeTrue()) }).Should(Succeed())

		Expect(env.Client.Delete(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(exists(g, dep)).To(BeFalse()) }).Should(Succeed())
	})

	It("collects dependents whose owner never existed", func() {
		ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "00000000-0000-0000-0000-000000000001"}
		dep := configMap(ctx, ns, "dep", ghost)
		Eventually(func(g Gomega) { g.Expect(exists(g, dep)).To(BeFalse()) }).Should(Succeed())
	})

	It("checks owners by UID: an object with the owner's name but another UID is not the owner", func() {
		// As after the owner was deleted and recreated while the collector was not running.
		configMap(ctx, ns, "owner")
		stale := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "00000000-0000-0000-0000-000000000003"}
		dep := configMap(ctx, ns, "dep", stale)
		Eventually(func(g Gomega) { g.Expect(exists(g, dep)).To(BeFalse()) }).Should(Succeed())
	})

	It("handles scopes: cluster-scoped owners of namespaced dependents, and the invalid converse", func() {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-owner-"}}
		Expect(env.Client.Create(ctx, role)).To(Succeed())
		// The ghost owner makes the collector classify the role while it exists.
		ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "00000000-0000-0000-0000-000000000004"}
		dep := configMap(ctx, ns, "dep", refTo(role, false), ghost)
		// A cluster-scoped object cannot be owned by a namespaced one: it is left alone.
		bad := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			GenerateName:    "gc-invalid-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "00000000-0000-0000-0000-000000000002"}},
		}}
		Expect(env.Client.Create(ctx, bad)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(context.Background(), bad))).To(Succeed()) })

		Eventually(func(g Gomega) {
			g.Expect(ownerUIDs(current(g, dep))).To(ConsistOf(role.UID))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(exists(g, dep)).To(BeTrue())
			g.Expect(exists(g, bad)).To(BeTrue())
		}).Should(Succeed())
		Expect(env.Client.Delete(ctx, role)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(exists(g, dep)).To(BeFalse()) }).Should(Succeed())
		Expect(exists(Default, bad)).To(BeTrue())
	})

	It("reports a reference to an owner in another namespace, and does not take it for that owner", func() {
		owner := configMap(ctx, ns, "owner")
		valid := configMap(ctx, ns, "valid", refTo(owner, false))
		// The owner must be in the graph before the invalid reference arrives, as upstream.
		Eventually(func(g Gomega) { g.Expect(exists(g, valid)).To(BeTrue()) }).Should(Succeed())
		otherNS := env.Namespace(ctx, "gc")
		invalid := configMap(ctx, otherNS, "invalid", refTo(owner, false))

		Eventually(func(g Gomega) {
			g.Expect(eventsFor(g, otherNS, "invalid", garbagecollector.ReasonOwnerRefInvalidNamespace)).To(ContainElement(
				fmt.Sprintf("OwnerRefInvalidNamespace: ownerRef [v1/ConfigMap, namespace: %s, name: owner, uid: %s] does not exist in namespace %q",
					otherNS, owner.UID, otherNS)))
		}).Should(Succeed())
		// There is no such owner in its namespace: as upstream, the invalid dependent is
		// garbage; the owner and its valid dependent stay.
		Eventually(func(g Gomega) { g.Expect(exists(g, invalid)).To(BeFalse()) }).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(exists(g, owner)).To(BeTrue())
			g.Expect(exists(g, valid)).To(BeTrue())
		}).Should(Succeed())
	})

	It("watches a CRD installed after start and collects its objects", func() {
		crd := installWidgetCRD(ctx)
		DeferCleanup(func() { Expect(env.Client.Delete(context.Background(), crd)).To(Succeed()) })

		owner := widget(ctx, ns, "owner")
		dep := widget(ctx, ns, "dep", refTo(owner, true))
		cm := configMap(ctx, ns, "cm", refTo(owner, false))
		By("background: custom and built-in dependents of a custom resource")
		Expect(env.Client.Delete(ctx, owner)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(exists(g, dep)).To(BeFalse())
			g.Expect(exists(g, cm)).To(BeFalse())
		}).Should(Succeed())

		By("orphan: custom resources take no strategic merge patch")
		owner2 := widget(ctx, ns, "owner2")
		dep2 := widget(ctx, ns, "dep2", refTo(owner2, true))
		Eventually(func(g Gomega) { g.Expect(exists(g, dep2)).To(BeTrue()) }).Should(Succeed())
		Expect(env.Client.Delete(ctx, owner2, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(exists(g, owner2)).To(BeFalse())
			g.Expect(current(g, dep2).GetOwnerReferences()).To(BeEmpty())
		}).Should(Succeed())

		By("foreground")
		owner3 := widget(ctx, ns, "owner3")
		dep3 := widget(ctx, ns, "dep3", refTo(owner3, true))
		hold(ctx, dep3)
		Expect(env.Client.Delete(ctx, owner3, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(current(g, dep3).GetDeletionTimestamp()).NotTo(BeNil()) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(exists(g, owner3)).To(BeTrue()) }).Should(Succeed())
		release(ctx, dep3)
		Eventually(func(g Gomega) { g.Expect(exists(g, owner3)).To(BeFalse()) }).Should(Succeed())
	})

	It("counts a discovery pass whose new watch did not sync, as upstream, and keeps collecting", func() {
		before := syncErrors()
		crd := installUnlistableCRD(ctx, ns)
		DeferCleanup(func() { Expect(env.Client.Delete(context.Background(), crd)).To(Succeed()) })
		Eventually(syncErrors).Should(BeNumerically(">", before))

		// The other watches still serve the collector.
		owner := configMap(ctx, ns, "owner")
		dep := configMap(ctx, ns, "dep", refTo(owner, false))
		Expect(env.Client.Delete(ctx, owner)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(exists(g, dep)).To(BeFalse()) }).Should(Succeed())
	})

	It("collects 200 pods of a deleted ReplicaSet", func() {
		const n = 200
		// Replicas 0 and a selector matching none of the pods, which the ReplicaSet only owns
		// (not controls): the replicaset-controller leaves them alone.
		replicas := int32(0)
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "none"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				defer GinkgoRecover()
				Expect(env.Client.Create(ctx, pod(ns, fmt.Sprintf("p-%03d", i), refTo(rs, true)))).To(Succeed())
			})
		}
		wg.Wait()
		// Let the collector see them all before the owner goes.
		Consistently(func(g Gomega) { g.Expect(listPods(g, ns)).To(HaveLen(n)) }, time.Second).Should(Succeed())

		start := time.Now()
		Expect(env.Client.Delete(ctx, rs, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(listPods(g, ns)).To(BeEmpty()) }, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		took := time.Since(start)
		AddReportEntry("collected 200 pods of a deleted ReplicaSet", took.String())
		GinkgoWriter.Printf("Collected %d pods in %v (default --kube-api-qps=20: the collector's client has 40)\n", n, took)
	})

	It("reads --enable-garbage-collector, and catches up with what it missed when it runs again", func() {
		stopSuiteManager()
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			startSuiteManager()
		})
		Expect(env.StartManager([]string{garbagecollector.ControllerName}, "--enable-garbage-collector=false")).To(Succeed())
		owner := configMap(ctx, ns, "owner")
		dep := configMap(ctx, ns, "dep", refTo(owner, false))
		Expect(env.Client.Delete(ctx, owner)).To(Succeed())
		Consistently(func(g Gomega) { g.Expect(exists(g, dep)).To(BeTrue()) }).Should(Succeed())

		By("starting it through the registry, as kcm does")
		Expect(env.StopManager()).To(Succeed())
		Expect(env.StartManager([]string{garbagecollector.ControllerName})).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(exists(g, dep)).To(BeFalse()) }).Should(Succeed())
	})
})
