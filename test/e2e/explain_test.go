//go:build e2e && linux

package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/explain"
	"github.com/kcm/kcm/internal/track"
	"github.com/kcm/kcm/test/cluster"
)

// `kcm explain` (issue 37) against stuck states built through the public API, as a user
// would meet them: the command, run as a process with an administrator's kubeconfig, must
// name the cause in its summary line (the tree output's first line) and in -o json's
// summary and causes, and say so by its exit code (0 converged, 1 not, 2 an error).
var _ = Describe("kcm explain", func() {
	It("names an exceeded ResourceQuota for a Deployment, and replicaset-controller's backoff in its view", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		By("a quota of one pod, status computed by resource-quota-controller")
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
		Expect(cl.Create(ctx, quota)).To(Succeed())
		// Quota admission refuses every pod until the quota's status has been computed.
		Eventually(ctx, func(g Gomega) corev1.ResourceList {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			return quota.Status.Hard
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(HaveKey(corev1.ResourcePods), "logs in %s", logDir)

		By("a Deployment of three replicas: one pod created, two refused")
		Expect(cl.Create(ctx, newDeployment(ns, "web", 3))).To(Succeed())
		report, _ := explainUntil(ctx, "deployment/web", ns, expectation{
			status:  explain.InProgress,
			summary: ContainSubstring("exceeded quota"),
			cause: And(HaveField("Object.Kind", "ReplicaSet"), HaveField("Reason", "FailedCreate"),
				HaveField("Message", ContainSubstring("exceeded quota"))),
		})
		Expect(report.Object).To(Equal(explain.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}))

		By("replicaset-controller's view of the ReplicaSet, read from the leader: its creates refused and retried")
		url := kcmURL()
		Eventually(ctx, func(g Gomega) {
			r := explainJSON(ctx, g, "deployment/web", "-n", ns, "--kcm-url", url, "--kcm-insecure-skip-tls-verify")
			g.Expect(r.Leader).NotTo(BeNil())
			g.Expect(r.Leader.Error).To(BeEmpty(), "the leader's views are read from %s", url)
			rs := findNode(r.Tree, "ReplicaSet")
			g.Expect(rs).NotTo(BeNil(), "the tree holds the ReplicaSet: %+v", r.Tree)
			g.Expect(rs.View).NotTo(BeNil(), "replicaset-controller's view of %s", rs.Object.Name)
			v := rs.View
			g.Expect(v.Controller).To(Equal("replicaset-controller"))
			g.Expect(v.Key).To(Equal(ns + "/" + rs.Object.Name))
			g.Expect(v.Queue.Retries).To(BeNumerically(">=", 1), "retries: %+v", v.Queue)
			lastFailed := len(v.Syncs) > 0 && v.Syncs[len(v.Syncs)-1].Result == track.Error
			backingOff := v.Queue.State == track.BackingOff && v.Queue.NextAttempt != nil
			g.Expect(backingOff || lastFailed).To(BeTrue(), "backing off with a next attempt, or the last sync failed: %+v, syncs %+v", v.Queue, v.Syncs)
			if lastFailed {
				g.Expect(v.Syncs[len(v.Syncs)-1].Error).To(ContainSubstring("exceeded quota"))
			}
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)

		// The tree with the controllers' views, for the README.
		tree := runExplain(ctx, "deployment/web", "-n", ns, "--kcm-url", url, "--kcm-insecure-skip-tls-verify")
		Expect(tree.code).To(Equal(explain.ExitNotConverged), "%s", tree)
		Expect(firstLine(tree.stdout)).To(ContainSubstring("exceeded quota"), "%s", tree)
		out := filepath.Join(logDir, "explain-deployment-quota.txt")
		Expect(os.WriteFile(out, []byte(tree.stdout), 0o644)).To(Succeed())
		GinkgoWriter.Printf("$ kcm explain deployment/web -n %s --kcm-url %s --kcm-insecure-skip-tls-verify (saved in %s)\n%s\n", ns, url, out, tree.stdout)
	})

	It("names the scheduler's FailedScheduling for a Deployment whose pod fits no node", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		d := newDeployment(ns, "nowhere", 1)
		d.Spec.Template.Spec.NodeSelector = map[string]string{"example.com/pool": "none"}
		Expect(cl.Create(ctx, d)).To(Succeed())
		explainUntil(ctx, "deployment/nowhere", ns, expectation{
			status:  explain.InProgress,
			summary: Or(ContainSubstring("FailedScheduling"), ContainSubstring("didn't match")),
			cause: And(HaveField("Object.Kind", "Pod"), HaveField("Reason", "FailedScheduling"),
				HaveField("Message", ContainSubstring("didn't match Pod's node affinity/selector"))),
		})
	})

	It("names BackoffLimitExceeded for a Job whose pod failed", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		labels := map[string]string{"app": "fail"}
		tmpl := podTemplate(labels, pauseImage)
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		// No node matches: kwok never runs the pod, which the spec fails as its kubelet would.
		tmpl.Spec.NodeSelector = map[string]string{"example.com/pool": "none"}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fail"},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: tmpl}}
		Expect(cl.Create(ctx, job)).To(Succeed())

		By("the Job's pod fails: its container exited 1")
		Eventually(ctx, func(g Gomega) {
			pods := livePods(g, ns, map[string]string{batchv1.JobNameLabel: "fail"})
			g.Expect(pods).To(HaveLen(1))
			p := &pods[0]
			p.Status.Phase = corev1.PodFailed
			now := metav1.Now()
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: pauseImage,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now}}}}
			g.Expect(cl.Status().Update(ctx, p)).To(Succeed())
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		Eventually(ctx, func(g Gomega) corev1.ConditionStatus {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			return jobCondition(job, batchv1.JobFailed)
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Equal(corev1.ConditionTrue), "logs in %s", logDir)

		explainUntil(ctx, "job/fail", ns, expectation{
			status:  explain.Failed,
			summary: Or(ContainSubstring("BackoffLimitExceeded"), ContainSubstring("backoff limit")),
			cause:   And(HaveField("Object.Kind", "Job"), HaveField("Reason", "BackoffLimitExceeded")),
		})
	})

	It("names the custom resource and the finalizer that hold a Namespace Terminating", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		group, plural, kind := strings.TrimPrefix(ns, "e2e-")+".explain.kcm.test", "widgets", "Widget"
		crd := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": plural + "." + group},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names": map[string]any{"plural": plural, "singular": "widget", "kind": kind, "listKind": kind + "List"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		Expect(cl.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, crd))).To(Succeed()) })

		const finalizer = "example.com/hold"
		widget := &unstructured.Unstructured{}
		widget.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
		widget.SetNamespace(ns)
		widget.SetName("held")
		widget.SetFinalizers([]string{finalizer})
		// The CRD is established once its objects can be created.
		Eventually(ctx, func() error { return cl.Create(ctx, widget) }).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		// Runs before the CRD's deletion: the namespace goes once nothing holds it.
		DeferCleanup(func(ctx SpecContext) {
			Eventually(ctx, func(g Gomega) {
				w := &unstructured.Unstructured{}
				w.SetGroupVersionKind(widget.GroupVersionKind())
				err := cl.Get(ctx, client.ObjectKeyFromObject(widget), w)
				if client.IgnoreNotFound(err) == nil && err != nil {
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				w.SetFinalizers(nil)
				g.Expect(client.IgnoreNotFound(cl.Update(ctx, w))).To(Succeed())
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})

		By("deleting the namespace: namespace-controller cannot finish")
		Expect(cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		explainUntil(ctx, "namespace/"+ns, "", expectation{
			status:  explain.Terminating,
			summary: And(ContainSubstring(finalizer), ContainSubstring("held")),
			cause: And(HaveField("Object", And(HaveField("Kind", kind), HaveField("Namespace", ns), HaveField("Name", "held"))),
				HaveField("Reason", "Finalizer"), HaveField("Finalizer", finalizer)),
		})
	})

	// The binder records "no persistent volumes available" as a Normal FailedBinding Event,
	// which kcm explain reads as the claim's cause.
	It("names the binder's FailedBinding for a claim no volume matches", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				// No storage class: only a pre-provisioned volume could bind it, and there is none.
				StorageClassName: ptr.To(""),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}}
		Expect(cl.Create(ctx, pvc)).To(Succeed())
		explainUntil(ctx, "persistentvolumeclaim/data", ns, expectation{
			status:  explain.InProgress,
			summary: Or(ContainSubstring("FailedBinding"), ContainSubstring("no persistent volumes available")),
			cause: And(HaveField("Object.Kind", "PersistentVolumeClaim"), HaveField("Reason", "FailedBinding"),
				HaveField("Message", ContainSubstring("no persistent volumes available"))),
		})
	})

	It("names the unready pod an OrderedReady StatefulSet waits on", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		labels := map[string]string{"app": "db"}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				PodManagementPolicy: appsv1.OrderedReadyPodManagement, Template: podTemplate(labels, pauseImage)}}
		Expect(cl.Create(ctx, sts)).To(Succeed())
		// Runs before the namespace's deletion: statefulset-controller, as upstream's, would
		// recreate the pods namespace-controller deletes, refused in a terminating namespace.
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(cl.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
			Eventually(ctx, func() error { return cl.Get(ctx, client.ObjectKeyFromObject(sts), &appsv1.StatefulSet{}) }).
				WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
		})
		Eventually(ctx, func(g Gomega) int32 {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
			return sts.Status.ReadyReplicas
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Equal(int32(1)), "logs in %s", logDir)

		By("db-0 turns unready, as its kubelet would report a failing readiness probe; then three replicas are asked for")
		Eventually(ctx, func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-0"}, p)).To(Succeed())
			for i, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
					p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, metav1.Now()
				}
			}
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].Ready = false
			}
			// kwok's stages make a Pending pod Running and Ready once; they leave a Running pod be.
			g.Expect(cl.Status().Update(ctx, p)).To(Succeed())
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Eventually(ctx, func(g Gomega) int32 {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
			return sts.Status.ReadyReplicas
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(BeZero(), "logs in %s", logDir)
		Eventually(ctx, func() error {
			patch := client.MergeFrom(sts.DeepCopy())
			sts.Spec.Replicas = ptr.To[int32](3)
			return cl.Patch(ctx, sts, patch)
		}).WithTimeout(10 * time.Second).Should(Succeed())

		report, _ := explainUntil(ctx, "statefulset/db", ns, expectation{
			status:  explain.InProgress,
			summary: ContainSubstring("db-0"),
			cause:   HaveField("Object", And(HaveField("Kind", "Pod"), HaveField("Name", "db-0"))),
		})
		Expect(report.Causes).NotTo(ContainElement(HaveField("Object.Name", Or(Equal("db-1"), Equal("db-2")))),
			"the ordinals after db-0 are not created while it is unready")
		pod := &corev1.Pod{}
		Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-1"}, pod)).NotTo(Succeed(), "OrderedReady: db-1 waits for db-0")
	})

	It("reports a converged Deployment Current, exit 0", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(cl.Create(ctx, newDeployment(ns, "ok", 1))).To(Succeed())
		waitDeploymentComplete(ctx, ns, "ok", 1)
		var r explainResult
		Eventually(ctx, func(g Gomega) {
			r = runExplain(ctx, "deployment/ok", "-n", ns, "-o", "json")
			g.Expect(r.code).To(Equal(explain.ExitConverged), "%s", r)
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		report := decodeReport(Default, r)
		Expect(report.Status).To(Equal(explain.Current))
		Expect(report.Converged).To(BeTrue())
		Expect(report.Causes).To(BeEmpty())
		Expect(report.Summary).To(HavePrefix("Deployment/ok Current"))
		tree := runExplain(ctx, "deployment/ok", "-n", ns)
		Expect(tree.code).To(Equal(explain.ExitConverged), "%s", tree)
		Expect(firstLine(tree.stdout)).To(Equal(report.Summary))
	})

	It("refuses bad input with one line on stderr and exit 2", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		expectError := func(r explainResult, names string) {
			GinkgoHelper()
			Expect(r.code).To(Equal(explain.ExitError), "%s", r)
			line := strings.TrimSpace(r.stderr)
			Expect(line).NotTo(BeEmpty(), "%s", r)
			Expect(strings.Split(line, "\n")).To(HaveLen(1), "one line on stderr: %s", r)
			Expect(line).To(ContainSubstring(names), "%s", r)
			Expect(r.stdout+r.stderr).NotTo(Or(ContainSubstring("goroutine"), ContainSubstring("panic")), "%s", r)
		}
		By("an unknown type")
		expectError(runExplain(ctx, "frobnicator/x", "-n", ns), "frobnicator")
		By("an unknown name")
		expectError(runExplain(ctx, "deployment/nothing-here", "-n", ns), "nothing-here")

		By("a kubeconfig whose user has no rights: a ServiceAccount without any binding")
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}}
		Expect(cl.Create(ctx, sa)).To(Succeed())
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		Expect(cl.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
		Expect(cl.Create(ctx, newDeployment(ns, "web", 1))).To(Succeed())
		nobody := filepath.Join(logDir, "explain-nobody.kubeconfig")
		writeTokenKubeconfig(nobody, tr.Status.Token)
		expectError(runExplain(ctx, "deployment/web", "-n", ns, "--kubeconfig="+nobody), "forbidden")

		By("an unreachable leader: --kcm-url on a port nothing listens on")
		closed := fmt.Sprintf("https://127.0.0.1:%d", freePort())
		expectError(runExplain(ctx, "deployment/web", "-n", ns, "--kcm-url", closed, "--kcm-insecure-skip-tls-verify"),
			strings.TrimPrefix(closed, "https://"))
	})

	// Serial: the histogram is kcm's, whole; no other spec's Deployment may converge meanwhile.
	It("agrees with an outside watch on 40 convergences of 20 Deployments: per object and in kcm_convergence_duration_seconds", Serial, func(ctx SpecContext) {
		const (
			count      = 20
			controller = "deployment-controller"
		)
		ns := newNamespace(ctx)
		before := convergenceHistogram(ctx, controller)
		history := watchDeployments(ctx, ns)

		By(fmt.Sprintf("creating %d Deployments of one replica", count))
		names := make([]string, count)
		for i := range names {
			names[i] = fmt.Sprintf("roll-%02d", i)
			Expect(cl.Create(ctx, newDeployment(ns, names[i], 1))).To(Succeed())
		}
		waitConverged := func(generation int64) {
			GinkgoHelper()
			Eventually(ctx, func(g Gomega) {
				for _, name := range names {
					g.Expect(history.hasConverged(name, generation)).To(BeTrue(), "Deployment %s converged at generation %d", name, generation)
				}
			}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		}
		waitConverged(1)

		By("changing each one's template once")
		for _, name := range names {
			Eventually(ctx, func() error {
				d := &appsv1.Deployment{}
				if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
					return err
				}
				patch := client.MergeFrom(d.DeepCopy())
				d.Spec.Template.Annotations = map[string]string{"example.com/rollout": "2"}
				return cl.Patch(ctx, d, patch)
			}).WithTimeout(10 * time.Second).Should(Succeed())
		}
		waitConverged(2)
		Expect(history.err()).NotTo(HaveOccurred(), "the watch ran through the spec")

		By("kcm's histogram observed the 40 convergences, its sum the outside one's")
		var outside float64
		for _, name := range names {
			for _, generation := range []int64{1, 2} {
				outside += history.duration(name, generation).Seconds()
			}
		}
		var after histogram
		Eventually(ctx, func() uint64 {
			after = convergenceHistogram(ctx, controller)
			return after.count - before.count
		}).WithTimeout(30*time.Second).WithPolling(500*time.Millisecond).Should(BeNumerically(">=", 2*count), "%s", kcm.State())
		Expect(after.count-before.count).To(Equal(uint64(2*count)), "one observation per create and per change")
		sum := after.sum - before.sum
		Expect(sum).To(BeNumerically("~", outside, max(0.1*outside, 40)), "kcm's sum %.2fs, the outside watch's %.2fs", sum, outside)

		By("each Deployment's view: the last convergence as long as the outside watch saw it")
		var lines []string
		for _, name := range names {
			want := history.duration(name, 2).Seconds()
			v := controllerView(ctx, controller, ns, name)
			Expect(v.Convergence).NotTo(BeNil(), "%s's view of %s has a convergence", controller, name)
			Expect(v.Convergence.Converged).To(BeTrue(), "%s: %+v", name, v.Convergence)
			Expect(v.Convergence.LastSeconds).NotTo(BeNil(), "%s: %+v", name, v.Convergence)
			Expect(*v.Convergence.LastSeconds).To(BeNumerically("~", want, max(0.1*want, 1)),
				"Deployment %s: kcm's view %.2fs, the outside watch %.2fs", name, *v.Convergence.LastSeconds, want)
			lines = append(lines, fmt.Sprintf("%s %.2fs/%.2fs", name, *v.Convergence.LastSeconds, want))
		}
		AddReportEntry("Deployment change -> converged, kcm's view / outside watch", strings.Join(lines, ", "), ReportEntryVisibilityAlways)
		AddReportEntry("40 convergences, kcm_convergence_duration_seconds sum / outside sum", fmt.Sprintf("%.2fs / %.2fs", sum, outside), ReportEntryVisibilityAlways)
	}, SpecTimeout(4*time.Minute))
})

// The pool provider's exhausted pool: the spec restarts the suite's kcm with
// --cloud-provider=pool, as loadbalancer_test.go does, and writes the cluster-wide pool
// ConfigMap, so it is Serial; kcm gets kubeadm's arguments again afterwards.
var _ = Describe("kcm explain on a LoadBalancer Service", Serial, func() {
	// kstatus alone judges a type-LoadBalancer Service with a cluster IP Current; kcm explain
	// judges it InProgress until it has an address, and names its SyncLoadBalancerFailed Event.
	It("names the exhausted address pool", func(ctx SpecContext) {
		By("restarting kcm with kubeadm's arguments and --cloud-provider=pool")
		restartKCM(ctx, "--cloud-provider=pool")
		DeferCleanup(func(ctx SpecContext) {
			By("restarting kcm with kubeadm's arguments")
			restartKCM(ctx)
		})
		ns := newNamespace(ctx)
		pools := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kcm-address-pools"},
			Data:       map[string]string{"pools": fmt.Sprintf("- name: one\n  addresses:\n  - 198.51.100.20\n  namespaces:\n  - %s\n", ns)},
		}
		Expect(cl.Create(ctx, pools)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, pools))).To(Succeed()) })
		// Runs first: kcm, still with the pool, releases the Services' finalizers.
		DeferCleanup(func(ctx SpecContext) {
			Expect(cl.DeleteAllOf(ctx, &corev1.Service{}, client.InNamespace(ns))).To(Succeed())
			Eventually(ctx, func(g Gomega) []corev1.Service {
				list := &corev1.ServiceList{}
				g.Expect(cl.List(ctx, list, client.InNamespace(ns))).To(Succeed())
				return list.Items
			}).WithTimeout(time.Minute).Should(BeEmpty(), "the Services are deleted, their finalizers released; %s", kcm.State())
		})

		By("lb-0 takes the pool's one address; lb-1 waits")
		Expect(cl.Create(ctx, loadBalancerService(ns, "lb-0", ""))).To(Succeed())
		Eventually(ctx, func(g Gomega) []corev1.LoadBalancerIngress {
			svc := &corev1.Service{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lb-0"}, svc)).To(Succeed())
			return svc.Status.LoadBalancer.Ingress
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(HaveExactElements(HaveField("IP", "198.51.100.20")), "%s", kcm.State())
		Expect(cl.Create(ctx, loadBalancerService(ns, "lb-1", ""))).To(Succeed())
		explainUntil(ctx, "service/lb-1", ns, expectation{
			status:  explain.InProgress,
			summary: ContainSubstring("no address available"),
			cause: And(HaveField("Object", And(HaveField("Kind", "Service"), HaveField("Name", "lb-1"))),
				HaveField("Reason", "SyncLoadBalancerFailed"), HaveField("Message", ContainSubstring(`no address available in pool(s) "one"`))),
		})
	}, SpecTimeout(4*time.Minute))
})

// explainResult is one run of `kcm explain`.
type explainResult struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r explainResult) String() string {
	return fmt.Sprintf("$ kcm %s\nexit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runExplain runs `kcm explain args...` as a user would, with the administrator's kubeconfig
// unless args name one.
func runExplain(ctx context.Context, args ...string) explainResult {
	GinkgoHelper()
	args = append([]string{"explain"}, args...)
	if !strings.Contains(strings.Join(args, " "), "--kubeconfig") {
		args = append(args, "--kubeconfig="+kubeconfig)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcmBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := explainResult{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred(), "%s", r)
	}
	return r
}

// explainJSON runs `kcm explain target args... -o json` and decodes its report.
func explainJSON(ctx context.Context, g Gomega, target string, args ...string) explain.Report {
	return decodeReport(g, runExplain(ctx, append([]string{target, "-o", "json"}, args...)...))
}

func decodeReport(g Gomega, r explainResult) explain.Report {
	var report explain.Report
	g.Expect(json.Unmarshal([]byte(r.stdout), &report)).To(Succeed(), "%s", r)
	return report
}

// expectation is what `kcm explain` must say of a stuck object.
type expectation struct {
	// status is the report's Status.
	status string
	// summary matches the summary line, of the tree output and of -o json.
	summary types.GomegaMatcher
	// cause matches one of the report's causes.
	cause types.GomegaMatcher
}

// explainUntil runs `kcm explain` on target (in ns, if not empty) until it reports the
// object not converged (exit 1) with the expectation's status, summary and cause, in -o
// json and in its tree output, whose first line is the summary; Events arrive when they do.
// It returns the report and the tree output.
func explainUntil(ctx context.Context, target, ns string, want expectation) (explain.Report, string) {
	GinkgoHelper()
	args := []string{target}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	var report explain.Report
	var tree explainResult
	start, runs := time.Now(), 0
	Eventually(ctx, func(g Gomega) {
		runs++
		r := runExplain(ctx, append(args, "-o", "json")...)
		g.Expect(r.code).To(Equal(explain.ExitNotConverged), "%s", r)
		report = decodeReport(g, r)
		g.Expect(report.Status).To(Equal(want.status), "%s", r)
		g.Expect(report.Converged).To(BeFalse())
		g.Expect(report.Summary).To(want.summary, "the summary names the cause: %s", r)
		g.Expect(report.Causes).To(ContainElement(want.cause), "%s", r)
		tree = runExplain(ctx, args...)
		g.Expect(tree.code).To(Equal(explain.ExitNotConverged), "%s", tree)
		g.Expect(firstLine(tree.stdout)).To(want.summary, "the tree's first line names the cause: %s", tree)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
	GinkgoWriter.Printf("$ kcm explain %s (%d runs in %s)\n%s\n", strings.Join(args, " "), runs,
		time.Since(start).Round(time.Millisecond), firstLine(tree.stdout))
	return report, tree.stdout
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// findNode is the first link of the tree, depth first, of the kind.
func findNode(n explain.Node, kind string) *explain.Node {
	if n.Object.Kind == kind {
		return &n
	}
	for _, c := range n.Children {
		if found := findNode(c, kind); found != nil {
			return found
		}
	}
	return nil
}

// kcmURL is the address of the suite's current kcm process's secure port, which startKCM
// and restartKCM choose: read from its command line.
func kcmURL() string {
	GinkgoHelper()
	return processURL(kcm)
}

// processURL is the secure port of a kcm process, from its --secure-port.
func processURL(p *cluster.Process) string {
	GinkgoHelper()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid()))
	Expect(err).NotTo(HaveOccurred(), "%s", p.State())
	port := ""
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if v, ok := strings.CutPrefix(arg, "--secure-port="); ok {
			port = v
		}
	}
	_, err = strconv.Atoi(port)
	Expect(err).NotTo(HaveOccurred(), "%s's --secure-port in %q", p.Name, cmdline)
	return "https://127.0.0.1:" + port
}

// kcmGet reads a path of the suite kcm's secure port as the administrator.
func kcmGet(ctx context.Context, path string) (int, []byte, error) {
	return processGet(ctx, kcm, path)
}

// processGet reads a path of a kcm process's secure port as the administrator (a client
// certificate of the cluster CA, which kcm's delegated authentication accepts); kcm's serving
// certificate is its own self-signed one.
func processGet(ctx context.Context, p *cluster.Process, path string) (int, []byte, error) {
	cert, err := tls.X509KeyPair(local.Config.CertData, local.Config.KeyData)
	if err != nil {
		return 0, nil, err
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}} // self-signed
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, processURL(p)+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	return resp.StatusCode, body.Bytes(), err
}

// controllerView reads the controller's per-object view of ns/name from kcm.
func controllerView(ctx context.Context, controller, ns, name string) *track.View {
	GinkgoHelper()
	code, body, err := kcmGet(ctx, fmt.Sprintf("%s/%s/objects/%s/%s", track.DebugPath, controller, ns, name))
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(http.StatusOK), "%s", body)
	v := &track.View{}
	Expect(json.Unmarshal(body, v)).To(Succeed(), "%s", body)
	return v
}

type histogram struct {
	count uint64
	sum   float64
}

// convergenceHistogram is kcm_convergence_duration_seconds{controller} as kcm's /metrics
// serves it now (zero before its first observation).
func convergenceHistogram(ctx context.Context, controller string) histogram {
	GinkgoHelper()
	var h histogram
	Eventually(ctx, func(g Gomega) {
		code, body, err := kcmGet(ctx, "/metrics")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK), "%s", body)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		h = histogram{}
		family := families["kcm_convergence_duration_seconds"]
		if family == nil {
			return
		}
		g.Expect(family.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
		for _, m := range family.Metric {
			for _, l := range m.Label {
				if l.GetName() == "controller" && l.GetValue() == controller {
					h = histogram{count: m.Histogram.GetSampleCount(), sum: m.Histogram.GetSampleSum()}
				}
			}
		}
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	return h
}

// writeTokenKubeconfig writes a kubeconfig reaching the API server with a bearer token.
func writeTokenKubeconfig(path, token string) {
	GinkgoHelper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: local.Config.Host, CertificateAuthorityData: local.Config.CAData}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
}

// deploymentHistory is, per Deployment of a namespace, when an outside watch first saw each
// generation and first saw it converged by deployment-controller's rule (observedGeneration
// the generation, updated, available and status replicas all spec.replicas, Progressing
// NewReplicaSetAvailable).
type deploymentHistory struct {
	mu        sync.Mutex
	seen      map[string]map[int64]time.Time
	converged map[string]map[int64]time.Time
	failed    error
}

// watchDeployments watches the namespace's Deployments until the spec ends.
func watchDeployments(ctx context.Context, ns string) *deploymentHistory {
	GinkgoHelper()
	wc, err := client.NewWithWatch(local.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	h := &deploymentHistory{seen: map[string]map[int64]time.Time{}, converged: map[string]map[int64]time.Time{}}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stopped:
				return
			case ev, ok := <-w.ResultChan():
				now := time.Now()
				h.mu.Lock()
				switch {
				case !ok:
					h.failed = fmt.Errorf("the watch of Deployments in %s closed", ns)
				case ev.Type == watch.Error:
					h.failed = fmt.Errorf("the watch of Deployments in %s failed: %v", ns, ev.Object)
				default:
					if d, isDeployment := ev.Object.(*appsv1.Deployment); isDeployment && ev.Type != watch.Deleted {
						h.record(now, d)
					}
				}
				failed := h.failed != nil
				h.mu.Unlock()
				if failed {
					return
				}
			}
		}
	}()
	DeferCleanup(func() {
		close(stopped)
		w.Stop()
		<-done
	})
	return h
}

func (h *deploymentHistory) record(now time.Time, d *appsv1.Deployment) {
	if h.seen[d.Name] == nil {
		h.seen[d.Name], h.converged[d.Name] = map[int64]time.Time{}, map[int64]time.Time{}
	}
	if _, ok := h.seen[d.Name][d.Generation]; !ok {
		h.seen[d.Name][d.Generation] = now
	}
	if _, ok := h.converged[d.Name][d.Generation]; !ok && deploymentConverged(d) {
		h.converged[d.Name][d.Generation] = now
	}
}

// deploymentConverged is deployment-controller's rule, as a client outside sees it.
func deploymentConverged(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	progressing := false
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			progressing = c.Status == corev1.ConditionTrue && c.Reason == "NewReplicaSetAvailable"
		}
	}
	return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want &&
		s.Replicas == want && progressing
}

func (h *deploymentHistory) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

// hasConverged reports whether the Deployment was seen converged at the generation.
func (h *deploymentHistory) hasConverged(name string, generation int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.converged[name][generation]
	return ok
}

// duration is the time from the generation's first sight to its first converged sight.
func (h *deploymentHistory) duration(name string, generation int64) time.Duration {
	GinkgoHelper()
	h.mu.Lock()
	defer h.mu.Unlock()
	start, seen := h.seen[name][generation]
	end, converged := h.converged[name][generation]
	Expect(seen && converged).To(BeTrue(), "Deployment %s at generation %d seen and converged", name, generation)
	return end.Sub(start)
}
