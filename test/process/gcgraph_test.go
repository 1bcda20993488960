//go:build linux

package process_test

import (
	"context"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gcGraphPath is where upstream mounts the garbage collector's debugging handler: under
// /debug/controllers/ and the controller's name (BuildControllers).
const gcGraphPath = "/debug/controllers/garbage-collector-controller/graph"

var _ = Describe("The garbage collector's graph", func() {
	It("is served at "+gcGraphPath+" as upstream's: same nodes, attributes and edges", func() {
		ctx := context.Background()
		token := pagesToken("/debug/controllers/*", "/healthz")
		ns := newNamespace(env.Client)
		nsObj := &corev1.Namespace{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())

		// owner ← dep; owner and the (cluster-scoped) Namespace ← twoOwners; held, deleted
		// but kept by a finalizer, ← heldDep; fg, deleted in the foreground, ← its blocking
		// fgDep (kept by a finalizer); unknownDep names an owner of a kind no API serves,
		// which stays virtual.
		owner := gcConfigMap(ctx, ns, "owner")
		gcConfigMap(ctx, ns, "dep", gcRef(owner, false))
		twoOwners := gcConfigMap(ctx, ns, "two-owners", gcRef(owner, false), gcRef(nsObj, false))
		held := gcConfigMap(ctx, ns, "held")
		heldDep := gcConfigMap(ctx, ns, "held-dep", gcRef(held, false))
		fg := gcConfigMap(ctx, ns, "fg")
		fgDep := gcConfigMap(ctx, ns, "fg-dep", gcRef(fg, true))
		unknownDep := gcConfigMap(ctx, ns, "unknown-dep", metav1.OwnerReference{
			APIVersion: "example.kcm.io/v1", Kind: "Nothing", Name: "nothing", UID: "00000000-gcgraph-unknown"})
		Expect(env.Client.Delete(ctx, held)).To(Succeed())
		Expect(env.Client.Delete(ctx, fg, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		roots := []client.Object{owner, twoOwners, held, heldDep, fg, fgDep, unknownDep}
		query := "?"
		for _, o := range roots {
			query += "uid=" + string(o.GetUID()) + "&"
		}

		// As kubeadm runs it: its identity, each controller with its own credentials.
		conf := kubeadmKubeconfig()
		args := []string{"--kubeconfig=" + conf, "--use-service-account-credentials=true", "--leader-elect=false",
			"--bind-address=127.0.0.1", "--authentication-kubeconfig=" + conf, "--authorization-kubeconfig=" + conf,
			"--controllers=garbagecollector"}
		port := freePort()
		p := startKCM("kcm", append(args, "--secure-port="+strconv.Itoa(port))...)
		var kcm dotGraph
		Eventually(func(g Gomega) {
			kcm = readGCGraph(g, port, token, query)
			// Settled: every object observed, fg's blocking dependent deleted in turn.
			g.Expect(kcm.nodes).To(HaveLen(len(roots) + 3))
			g.Expect(kcm.nodes[string(fg.GetUID())]).To(HaveKeyWithValue("deletingDependents", "true"))
			g.Expect(kcm.nodes[string(fgDep.GetUID())]).To(HaveKeyWithValue("beingDeleted", "true"))
		}).Should(Succeed(), "kcm: %s", p.State())
		// Positive witnesses of each kind of node and of the edges' direction.
		Expect(kcm.nodes[string(held.GetUID())]).To(HaveKeyWithValue("beingDeleted", "true"))
		Expect(kcm.nodes["00000000-gcgraph-unknown"]).To(HaveKeyWithValue("virtual", "true"))
		Expect(kcm.nodes[string(nsObj.GetUID())]).To(HaveKeyWithValue("kind", "Namespace"))
		Expect(kcm.edges).To(ContainElement(string(fgDep.GetUID()) + " -> " + string(fg.GetUID())))
		code, _, _ := debugzGet(port, "", gcGraphPath, "")
		Expect(code).To(Equal(http.StatusForbidden), "without credentials")

		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it): not compared with its answers")
		}
		upstreamPort := freePort()
		u := startProcess("upstream", syscall.SIGKILL, bin, append(args, "--secure-port="+strconv.Itoa(upstreamPort))...)
		Eventually(func(g Gomega) {
			up := readGCGraph(g, upstreamPort, token, query)
			g.Expect(up).To(Equal(readGCGraph(g, port, token, query)))
		}).Should(Succeed(), "upstream: %s", u.State())
		// The whole graph holds the same part, and the paths around it answer alike.
		Eventually(func(g Gomega) {
			whole := readGCGraph(g, port, token, "")
			for uid, attrs := range kcm.nodes {
				g.Expect(whole.nodes).To(HaveKeyWithValue(uid, attrs))
			}
		}).Should(Succeed())
		for _, path := range []string{"/debug/controllers/garbage-collector-controller", "/debug/controllers/garbage-collector-controller/",
			"/debug/controllers/garbage-collector-controller/other", "/debug/controllers/garbagecollector/graph"} {
			kcmCode, _, _ := debugzGet(port, token, path, "")
			upCode, _, _ := debugzGet(upstreamPort, token, path, "")
			Expect(kcmCode).To(Equal(upCode), path)
		}
		upCode, _, _ := debugzGet(upstreamPort, "", gcGraphPath, "")
		Expect(upCode).To(Equal(http.StatusForbidden), "upstream without credentials")
	})
})

var _ = Describe("The garbage collector's graph on a standby replica", func() {
	It("is not found until the replica leads, as upstream's", func() {
		token := pagesToken("/debug/controllers/*", "/healthz")
		lease := uniqueLeaseName()
		conf := kubeadmKubeconfig()
		args := []string{"--kubeconfig=" + conf, "--use-service-account-credentials=true", "--leader-elect=true",
			"--leader-elect-resource-name=" + lease, "--bind-address=127.0.0.1", "--authentication-kubeconfig=" + conf,
			"--authorization-kubeconfig=" + conf, "--controllers=garbagecollector"}
		leaderPort := freePort()
		leader := startKCM("kcm-leader", append(args, "--secure-port="+strconv.Itoa(leaderPort))...)
		Eventually(leader.Count("Successfully acquired lease")).Should(Equal(1), "kcm-leader: %s", leader.State())
		Eventually(func(g Gomega) { readGCGraph(g, leaderPort, token, "") }).Should(Succeed(), "the leader serves its graph")

		standbyPort := freePort()
		standby := startKCM("kcm-standby", append(args, "--secure-port="+strconv.Itoa(standbyPort))...)
		// A standby's secure port serves (/healthz answers) while it waits for the Lease.
		Eventually(func() (int, error) {
			code, _, _, err := debugzRequest(standbyPort, token, "/healthz", "")
			return code, err
		}).Should(Equal(http.StatusOK), "kcm-standby: %s", standby.State())
		code, _, _ := debugzGet(standbyPort, token, gcGraphPath, "")
		Expect(code).To(Equal(http.StatusNotFound), "a standby kcm serves a graph it does not build")
		Expect(standby.Count("Successfully acquired lease")()).To(BeZero())

		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it): not compared with its answers")
		}
		upstreamPort := freePort()
		u := startProcess("upstream", syscall.SIGKILL, bin, append(args, "--secure-port="+strconv.Itoa(upstreamPort))...)
		Eventually(func() (int, error) {
			code, _, _, err := debugzRequest(upstreamPort, token, "/healthz", "")
			return code, err
		}).Should(Equal(http.StatusOK), "upstream: %s", u.State())
		upCode, _, _ := debugzGet(upstreamPort, token, gcGraphPath, "")
		Expect(upCode).To(Equal(code), "upstream's standby")
	})
})

// dotGraph is a DOT answer parsed: each node's attributes by UID, and the edges "from -> to",
// sorted.
type dotGraph struct {
	nodes map[string]map[string]string
	edges []string
}

var (
	dotNodeRE = regexp.MustCompile(`(?m)^  "([^"]*)" \[\n((?:    \w+="(?:[^"\\]|\\.)*"\n)*)  \];$`)
	dotAttrRE = regexp.MustCompile(`(?m)^    (\w+)=("(?:[^"\\]|\\.)*")$`)
	dotEdgeRE = regexp.MustCompile(`(?m)^  "([^"]*)" -> "([^"]*)";$`)
)

// readGCGraph asks the process on port for its graph (query: "" or "?uid=..."), and parses it.
func readGCGraph(g Gomega, port int, token, query string) dotGraph {
	code, ctype, body, err := debugzRequest(port, token, gcGraphPath+query, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(ctype).To(Equal("text/vnd.graphviz"))
	got := dotGraph{nodes: map[string]map[string]string{}}
	for _, m := range dotNodeRE.FindAllStringSubmatch(body, -1) {
		attrs := map[string]string{}
		for _, a := range dotAttrRE.FindAllStringSubmatch(m[2], -1) {
			v, err := strconv.Unquote(a[2])
			g.Expect(err).NotTo(HaveOccurred(), a[0])
			attrs[a[1]] = v
		}
		got.nodes[m[1]] = attrs
	}
	for _, m := range dotEdgeRE.FindAllStringSubmatch(body, -1) {
		got.edges = append(got.edges, m[1]+" -> "+m[2])
	}
	sort.Strings(got.edges)
	return got
}

func gcConfigMap(ctx context.Context, ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners}}
	if name == "held" || name == "fg" || name == "fg-dep" {
		// Kept once deleted, so the graph holds them being deleted.
		cm.Finalizers = []string{"kcm.io/gcgraph-test"}
		DeferCleanup(func() {
			_ = env.Client.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		})
	}
	Expect(env.Client.Create(ctx, cm)).To(Succeed())
	return cm
}

func gcRef(o client.Object, blocking bool) metav1.OwnerReference {
	gvk, err := env.Client.GroupVersionKindFor(o)
	Expect(err).NotTo(HaveOccurred())
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: o.GetName(),
		UID: o.GetUID(), BlockOwnerDeletion: ptr.To(blocking)}
}

// pagesToken returns the token of a new ServiceAccount allowed to GET the non-resource URLs.
func pagesToken(urls ...string) string {
	GinkgoHelper()
	ctx := context.Background()
	ns := newNamespace(env.Client)
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-pages-"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: urls, Verbs: []string{"get"}}},
	}
	Expect(env.Client.Create(ctx, role)).To(Succeed())
	DeferCleanup(env.Client.Delete, context.Background(), role)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages-reader"}}
	Expect(env.Client.Create(ctx, sa)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-pages-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(env.Client.Delete, context.Background(), binding)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}
