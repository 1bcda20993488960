package explain_test

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/explain"
	"github.com/kcm/kcm/internal/track"
)

var _ = Describe("kcm explain with the leader's views", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = env.Namespace(ctx, "views") })

	It("reads each link's view from --kcm-url with the kubeconfig's client certificate; a view not found is none", func(ctx SpecContext) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		Expect(env.Client.Create(ctx, svc)).To(Succeed())

		var users []string
		view := track.View{Controller: "endpointslice-controller", Key: ns + "/web", Queue: track.Queue{State: track.Idle},
			Syncs: []track.Sync{{Start: time.Now().Add(-time.Second), DurationSeconds: 0.002, Result: track.Success}}}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.TLS.PeerCertificates) == 0 {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			users = append(users, r.TLS.PeerCertificates[0].Subject.CommonName)
			switch r.URL.Path {
			case "/healthz":
				_, _ = w.Write([]byte("ok"))
			case track.DebugPath + "/endpointslice-controller/objects/" + ns + "/web":
				Expect(json.NewEncoder(w).Encode(view)).To(Succeed())
			default:
				http.NotFound(w, r)
			}
		}))
		// kcm's secure port asks for a client certificate (and verifies it by delegation).
		srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		srv.Config.ErrorLog = log.New(GinkgoWriter, "", 0) // the refused handshake below
		srv.StartTLS()
		DeferCleanup(srv.Close)

		r := run(admin, "service/web", "-n", ns, "-o", "json", "--kcm-url", srv.URL, "--kcm-insecure-skip-tls-verify")
		Expect(r.code).To(Equal(explain.ExitConverged), "%s", r)
		rep := report(r)
		Expect(rep.Leader).To(Equal(&explain.Leader{URL: srv.URL}))
		Expect(rep.Tree.Controller).To(Equal("endpointslice-controller"))
		Expect(rep.Tree.View).NotTo(BeNil(), "%s", r)
		Expect(rep.Tree.View.Key).To(Equal(ns + "/web"))
		Expect(rep.Tree.View.Syncs).To(HaveLen(1))
		Expect(users).NotTo(BeEmpty())
		Expect(users).To(HaveEach("admin"), "the kubeconfig's client certificate")

		By("trusting kcm's serving certificate from --kcm-ca-file")
		ca := filepath.Join(GinkgoT().TempDir(), "kcm-ca.crt")
		Expect(os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)).To(Succeed())
		tree := run(admin, "service/web", "-n", ns, "--kcm-url", srv.URL, "--kcm-ca-file", ca)
		Expect(tree.code).To(Equal(explain.ExitConverged), "%s", tree)
		GinkgoWriter.Println(tree.stdout)
		Expect(tree.stdout).To(ContainSubstring("queue: Idle"))
		Expect(tree.stdout).To(ContainSubstring("last sync: Success"))

		By("without trust in its certificate: an error naming the address, exit 2")
		expectError(run(admin, "service/web", "-n", ns, "--kcm-url", srv.URL), strings.TrimPrefix(srv.URL, "https://"))

		By("a leader that answers but refuses the views: said in the report, the tree the API's view")
		refusing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				_, _ = w.Write([]byte("ok"))
				return
			}
			http.Error(w, "forbidden: User \"admin\" cannot get path \""+r.URL.Path+"\"", http.StatusForbidden)
		}))
		DeferCleanup(refusing.Close)
		r = run(admin, "service/web", "-n", ns, "-o", "json", "--kcm-url", refusing.URL, "--kcm-insecure-skip-tls-verify")
		Expect(r.code).To(Equal(explain.ExitConverged), "%s", r)
		rep = report(r)
		Expect(rep.Tree.View).To(BeNil())
		Expect(rep.Leader.Error).To(And(ContainSubstring("403 Forbidden"), ContainSubstring("cannot get path")), "%s", r)
	})

	It("finds the leader from the Lease's holder; unreachable, the tree is the API's view and says why", func(ctx SpecContext) {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-1_0d1f0a9e-4c42-4a57-9b8e-1a2b3c4d5e6f")}}
		if err := env.Client.Create(ctx, lease); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, lease))).To(Succeed()) })
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}})).To(Succeed())

		rep := report(run(admin, "configmap/c", "-n", ns, "-o", "json"))
		Expect(rep.Leader.Holder).To(Equal("cp-1_0d1f0a9e-4c42-4a57-9b8e-1a2b3c4d5e6f"))
		Expect(rep.Leader.Error).To(ContainSubstring("no kube-system pod labelled component=kube-controller-manager runs on cp-1"))

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager-cp-1",
			Labels: map[string]string{"component": "kube-controller-manager"}},
			Spec: corev1.PodSpec{NodeName: "cp-1", Containers: []corev1.Container{{Name: "kcm", Image: "kcm"}}}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
		})
		r := run(admin, "configmap/c", "-n", ns, "-o", "json")
		Expect(r.code).To(Equal(explain.ExitConverged), "a leader not reached is no error: %s", r)
		rep = report(r)
		GinkgoWriter.Println(rep.Leader)
		Expect(rep.Leader.URL).To(HaveSuffix("/api/v1/namespaces/kube-system/pods/https:kube-controller-manager-cp-1:10257/proxy"))
		// No kubelet ran the pod: the API server has no address to proxy to.
		Expect(rep.Leader.Error).NotTo(BeEmpty())
	})

	It("with controller groups, reads each controller's view from the holder of its group's Lease; a controller in no group from the one Lease's leader", func(ctx SpecContext) {
		labels := map[string]string{"app": "web"}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}}}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: d.Spec.Selector, Template: tmpl}}
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "explain-" + ns}}
		Expect(env.Client.Create(ctx, node)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, node))).To(Succeed()) })
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1-a", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: tmpl.Spec.Containers}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())

		// Two replicas, each serving the views of the controllers it runs only, as kcm's do.
		replica := func(controller, key string) (*httptest.Server, *[]string) {
			var asked []string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/healthz":
					_, _ = w.Write([]byte("ok"))
				case track.DebugPath + "/" + controller + "/objects/" + key:
					asked = append(asked, r.URL.Path)
					Expect(json.NewEncoder(w).Encode(track.View{Controller: controller, Key: key, Queue: track.Queue{State: track.Idle}})).To(Succeed())
				default:
					asked = append(asked, r.URL.Path)
					http.NotFound(w, r)
				}
			}))
			DeferCleanup(srv.Close)
			return srv, &asked
		}
		apps, appsAsked := replica("deployment-controller", ns+"/web")
		sets, setsAsked := replica("replicaset-controller", ns+"/web-1")
		const appsHolder, setsHolder = "replica-a_11111111", "replica-b_22222222"
		groupLease := func(group, holder, controllers string) {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager-" + group,
				Labels:      map[string]string{"kcm.k8s.io/controller-groups": "kube-controller-manager"},
				Annotations: map[string]string{"kcm.k8s.io/controllers": controllers}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
			Expect(env.Client.Create(ctx, l)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, l))).To(Succeed()) })
		}
		groupLease("apps", appsHolder, "deployment-controller,horizontal-pod-autoscaler-controller")
		groupLease("sets", setsHolder, "replicaset-controller")

		args := []string{"deployment/web", "-n", ns, "--kcm-insecure-skip-tls-verify",
			"--kcm-holder-url", appsHolder + "=" + apps.URL, "--kcm-holder-url", "replica-b=" + sets.URL}
		r := run(admin, append(args, "-o", "json")...)
		rep := report(r)
		Expect(rep.Tree.View).To(HaveField("Controller", "deployment-controller"), "%s", r)
		Expect(rep.Tree.Children).To(HaveExactElements(HaveField("View", HaveField("Controller", "replicaset-controller"))), "%s", r)
		Expect(*appsAsked).To(Equal([]string{track.DebugPath + "/deployment-controller/objects/" + ns + "/web"}))
		Expect(*setsAsked).To(Equal([]string{track.DebugPath + "/replicaset-controller/objects/" + ns + "/web-1"}))
		Expect(rep.Leaders).To(Equal([]explain.Leader{
			{Holder: appsHolder, URL: apps.URL, Leases: []string{"kube-controller-manager-apps"}, Controllers: []string{"deployment-controller"}},
			{Holder: setsHolder, URL: sets.URL, Leases: []string{"kube-controller-manager-sets"}, Controllers: []string{"replicaset-controller"}},
		}))
		// node-lifecycle-controller is in no group: the one Lease's, which does not exist here.
		Expect(rep.Leader).NotTo(BeNil())
		Expect(rep.Leader.Controllers).To(Equal([]string{"node-lifecycle-controller"}))
		Expect(rep.Leader.Error).To(ContainSubstring("kube-system/kube-controller-manager"))

		tree := run(admin, args...)
		GinkgoWriter.Println(tree.stdout)
		Expect(tree.stdout).To(ContainSubstring("(views of deployment-controller from " + apps.URL + ", holder " + appsHolder + ")\n"))
		Expect(tree.stdout).To(ContainSubstring("(views of replicaset-controller from " + sets.URL + ", holder " + setsHolder + ")\n"))
		Expect(tree.stdout).To(ContainSubstring("(views of node-lifecycle-controller not read: reading the Lease kube-system/kube-controller-manager"))

		By("--kcm-url is one kcm for every view: the group Leases are not read")
		r = run(admin, "deployment/web", "-n", ns, "-o", "json", "--kcm-url", apps.URL, "--kcm-insecure-skip-tls-verify")
		rep = report(r)
		Expect(rep.Leader).To(Equal(&explain.Leader{URL: apps.URL}))
		Expect(rep.Leaders).To(BeEmpty())
		Expect(rep.Tree.View).NotTo(BeNil())
		Expect(rep.Tree.Children[0].View).To(BeNil(), "the apps replica does not run replicaset-controller")
		expectError(run(admin, "deployment/web", "-n", ns, "--kcm-url", apps.URL, "--kcm-holder-url", appsHolder+"="+apps.URL), "exclude each other")
	})
})
