package resourcequota_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/resourcequota"
)

var _ = Describe("resourcequota-controller", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "rq") })

	It("fills status.hard promptly for a new quota, and follows changes to spec.hard", func() {
		create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}})
		rq := newQuota(ns, "compute", rl("pods", "10", "requests.cpu", "2", "count/configmaps", "5", "services", "3"))
		start := time.Now()
		create(ctx, rq)
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
			g.Expect(equality.Semantic.DeepEqual(rq.Status.Hard, rq.Spec.Hard)).To(BeTrue(), "status.hard %v", rq.Status.Hard)
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
		AddReportEntry("new quota: create to status.hard filled", time.Since(start).Round(time.Millisecond).String())
		expectUsed(ctx, rq, "pods", "0", "requests.cpu", "0", "count/configmaps", "1", "services", "0")

		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
		rq.Spec.Hard = rl("pods", "20", "secrets", "4")
		Expect(env.Client.Update(ctx, rq)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
			g.Expect(equality.Semantic.DeepEqual(rq.Status.Hard, rl("pods", "20", "secrets", "4"))).To(BeTrue(), "status.hard %v", rq.Status.Hard)
			g.Expect(sameUsed(rq.Status.Used, rl("pods", "0", "secrets", "0"))).To(Succeed())
		}).Should(Succeed())
	})

	It("blocks the N+1th pod, and its status.used is exact after creates and deletes", func() {
		rq := newQuota(ns, "pods", rl("pods", "2", "requests.cpu", "1"))
		create(ctx, rq)
		expectUsed(ctx, rq, "pods", "0", "requests.cpu", "0")

		create(ctx, newPod(ns, "a", "100m"))
		create(ctx, newPod(ns, "b", "250m"))
		expectUsed(ctx, rq, "pods", "2", "requests.cpu", "350m")
		err := env.Client.Create(ctx, newPod(ns, "c", "100m"))
		Expect(err).To(MatchError(ContainSubstring("exceeded quota")))

		// Nothing but the controller gives back what a deleted pod was charged.
		Expect(env.Client.Delete(ctx, newPod(ns, "b", ""))).To(Succeed())
		expectUsed(ctx, rq, "pods", "1", "requests.cpu", "100m")
		// Let the recounts of the deletion settle before the next creation: a recount that
		// runs after admission charged a pod and before the pod reaches the controller's
		// cache undercounts until the next event, here as upstream (see settle).
		settle(ctx, rq, "pods", "1", "requests.cpu", "100m")
		Eventually(func() error { return env.Client.Create(ctx, newPod(ns, "c", "100m")) }).Should(Succeed())
		expectUsed(ctx, rq, "pods", "2", "requests.cpu", "200m")
		Expect(env.Client.Create(ctx, newPod(ns, "d", "100m"))).To(MatchError(ContainSubstring("exceeded quota")))
	})

	It("stops charging pods that finish, and terminating pods once their grace period has passed", func() {
		rq := newQuota(ns, "pods", rl("pods", "5", "count/pods", "5", "requests.cpu", "5"))
		create(ctx, rq)
		expectUsed(ctx, rq, "pods", "0")
		done, stuck := newPod(ns, "done", "1"), newPod(ns, "stuck", "1")
		// Bound to a node that does not exist, a pod is deleted gracefully and stays.
		stuck.Spec.NodeName = "kcm-test-no-such-node"
		stuck.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
		create(ctx, done)
		create(ctx, stuck)
		expectUsed(ctx, rq, "pods", "2", "count/pods", "2", "requests.cpu", "2")

		done.Status.Phase = corev1.PodSucceeded
		Expect(env.Client.Status().Update(ctx, done)).To(Succeed())
		expectUsed(ctx, rq, "pods", "1", "count/pods", "2", "requests.cpu", "1")

		Expect(env.Client.Delete(ctx, stuck)).To(Succeed())
		// Charged until its deletion timestamp (now + 2s) plus its grace (2s) is past.
		Consistently(func(g Gomega) {
			g.Expect(sameUsed(used(ctx, g, rq), rl("pods", "1", "count/pods", "2", "requests.cpu", "1"))).To(Succeed())
		}, 2500*time.Millisecond).Should(Succeed())
		expectUsed(ctx, rq, "pods", "0", "count/pods", "2", "requests.cpu", "0")
	})

	It("counts objects of any kind with count/<resource>.<group> and the legacy names, recounting on deletion", func() {
		// Created before the quota: only the controller can count them.
		for i := range 2 {
			create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}})
		}
		create(ctx, newDeployment(ns, "web"))
		create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}})
		rq := newQuota(ns, "objects", rl("count/configmaps", "3", "configmaps", "3", "count/deployments.apps", "2", "secrets", "5",
			"count/events", "100", "count/widgets.example.com", "1"))
		create(ctx, rq)
		// Events are never counted, and a resource the server does not serve has no usage.
		expectUsed(ctx, rq, "count/configmaps", "2", "configmaps", "2", "count/deployments.apps", "1", "secrets", "1")
		Expect(used(ctx, Default, rq)).NotTo(HaveKey(corev1.ResourceName("count/events")))
		Expect(used(ctx, Default, rq)).NotTo(HaveKey(corev1.ResourceName("count/widgets.example.com")))

		create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-2"}})
		expectUsed(ctx, rq, "count/configmaps", "3", "configmaps", "3")
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-3"}})).
			To(MatchError(ContainSubstring("exceeded quota")))

		Expect(env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-0"}})).To(Succeed())
		expectUsed(ctx, rq, "count/configmaps", "2", "configmaps", "2")
		settle(ctx, rq, "count/configmaps", "2", "configmaps", "2")
		Eventually(func() error {
			return env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-3"}})
		}).Should(Succeed())
		settle(ctx, rq, "count/configmaps", "3", "configmaps", "3")

		Expect(env.Client.Delete(ctx, newDeployment(ns, "web"))).To(Succeed())
		Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}})).To(Succeed())
		expectUsed(ctx, rq, "count/deployments.apps", "0", "secrets", "0", "count/configmaps", "3")
	})

	It("charges a BestEffort quota with best-effort pods only", func() {
		create(ctx, newPod(ns, "be-0", ""))
		create(ctx, newPod(ns, "burstable-0", "100m"))
		rq := newQuota(ns, "best-effort", rl("pods", "2"))
		rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		create(ctx, rq)
		expectUsed(ctx, rq, "pods", "1")

		create(ctx, newPod(ns, "be-1", ""))
		expectUsed(ctx, rq, "pods", "2")
		Expect(env.Client.Create(ctx, newPod(ns, "be-2", ""))).To(MatchError(ContainSubstring("exceeded quota")))
		// Out of the quota's scope, not charged.
		create(ctx, newPod(ns, "burstable-1", "100m"))
		Expect(env.Client.Delete(ctx, newPod(ns, "burstable-0", ""))).To(Succeed())
		Consistently(func(g Gomega) { g.Expect(sameUsed(used(ctx, g, rq), rl("pods", "2"))).To(Succeed()) }).Should(Succeed())

		Expect(env.Client.Delete(ctx, newPod(ns, "be-0", ""))).To(Succeed())
		expectUsed(ctx, rq, "pods", "1")
	})

	It("charges services, node ports and load balancers, and persistent volume claims per storage class", func() {
		rq := newQuota(ns, "network-storage", rl("services", "5", "services.nodeports", "5", "services.loadbalancers", "1",
			"persistentvolumeclaims", "5", "requests.storage", "10Gi",
			"gold.storageclass.storage.k8s.io/requests.storage", "3Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"))
		create(ctx, rq)
		expectUsed(ctx, rq, "services", "0", "persistentvolumeclaims", "0", "gold.storageclass.storage.k8s.io/requests.storage", "0")

		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
		}}
		create(ctx, svc)
		create(ctx, newPVC(ns, "plain", "", "1Gi"))
		create(ctx, newPVC(ns, "gold", "gold", "2Gi"))
		expectUsed(ctx, rq, "services", "1", "services.nodeports", "2", "services.loadbalancers", "0",
			"persistentvolumeclaims", "2", "requests.storage", "3Gi",
			"gold.storageclass.storage.k8s.io/requests.storage", "2Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1")
		Expect(env.Client.Create(ctx, newPVC(ns, "gold-2", "gold", "1Gi"))).To(MatchError(ContainSubstring("exceeded quota")))

		// NodePort to ClusterIP frees the node ports: admission does not give them back.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
		Expect(env.Client.Update(ctx, svc)).To(Succeed())
		expectUsed(ctx, rq, "services", "1", "services.nodeports", "0")

		// The claim is held by the pvc-protection finalizer; the test plays its controller.
		gold := newPVC(ns, "gold", "gold", "")
		Expect(env.Client.Delete(ctx, gold)).To(Succeed())
		Expect(env.Client.Patch(ctx, gold, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Expect(env.Client.Delete(ctx, svc)).To(Succeed())
		expectUsed(ctx, rq, "services", "0", "persistentvolumeclaims", "1", "requests.storage", "1Gi",
			"gold.storageclass.storage.k8s.io/requests.storage", "0", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "0")
	})

	It("corrects usage on --resource-quota-sync-period when no event says it is wrong", func() {
		DeferCleanup(func() { restartManager() })
		restartManager("--resource-quota-sync-period=3s")
		rq := newQuota(ns, "resync", rl("pods", "4", "configmaps", "4"))
		create(ctx, rq)
		expectUsed(ctx, rq, "pods", "0", "configmaps", "0")

		// A wrong usage written by someone else: a status change is no reason to recount.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rq), rq)).To(Succeed())
		rq.Status.Used = rl("pods", "3", "configmaps", "2")
		Expect(env.Client.Status().Update(ctx, rq)).To(Succeed())
		expectUsed(ctx, rq, "pods", "0", "configmaps", "0")
	})
})

// restartManager restarts the kcm manager with the given flags, and waits until the
// controller serves quotas again (its watches synced), so that the manager can be stopped
// cleanly at any time after.
func restartManager(args ...string) {
	GinkgoHelper()
	Expect(env.StopManager()).To(Succeed())
	Expect(env.StartManager([]string{resourcequota.ControllerName}, args...)).To(Succeed())
	ctx := context.Background()
	probe := newQuota(env.Namespace(ctx, "rq"), "probe", rl("pods", "1"))
	create(ctx, probe)
	expectUsed(ctx, probe, "pods", "0")
}

func create(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, obj)).To(Succeed())
}

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func newQuota(ns, name string, hard corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
}

// newPod is a pod requesting cpu (none: best effort).
func newPod(ns, name, cpu string) *corev1.Pod {
	c := corev1.Container{Name: "app", Image: "registry.k8s.io/pause:3.10"}
	if cpu != "" {
		c.Resources.Requests = rl("cpu", cpu)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func newPVC(ns, name, class, size string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
	}}
	if class != "" {
		pvc.Spec.StorageClassName = ptr.To(class)
	}
	if size != "" {
		pvc.Spec.Resources.Requests = rl("storage", size)
	}
	return pvc
}

func newDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: newPod(ns, name, "").Spec},
	}}
}

func used(ctx context.Context, g Gomega, rq *corev1.ResourceQuota) corev1.ResourceList {
	cur := &corev1.ResourceQuota{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rq), cur)).To(Succeed())
	return cur.Status.Used
}

// sameUsed checks that used holds want's resources at want's quantities.
func sameUsed(used, want corev1.ResourceList) error {
	for name, q := range want {
		u, ok := used[name]
		if !ok {
			return fmt.Errorf("no usage of %s in %v", name, used)
		}
		if u.Cmp(q) != 0 {
			return fmt.Errorf("%s used %s, want %s", name, u.String(), q.String())
		}
	}
	return nil
}

// settle checks that the quota's usage stays as given for a second. The controller counts
// from its caches, each fed by its own watch: a recount triggered by one kind's event may
// run before another watch delivers an object that admission has already charged, and
// then undercounts until the next event (upstream has the same window). Specs that create
// right after a recount, or recount right after a creation, let the caches catch up first.
func settle(ctx context.Context, rq *corev1.ResourceQuota, pairs ...string) {
	GinkgoHelper()
	want := rl(pairs...)
	Consistently(func(g Gomega) { g.Expect(sameUsed(used(ctx, g, rq), want)).To(Succeed()) }, time.Second).Should(Succeed())
}

// expectUsed waits until the quota's status.used shows the given usage.
func expectUsed(ctx context.Context, rq *corev1.ResourceQuota, pairs ...string) {
	GinkgoHelper()
	want := rl(pairs...)
	Eventually(func(g Gomega) { g.Expect(sameUsed(used(ctx, g, rq), want)).To(Succeed()) }).Should(Succeed())
}
