package manifests_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

const (
	namespace = "kube-system"
	name      = "kcm"
	// securePort is upstream kube-controller-manager's HTTPS port.
	securePort = 10257
	// fieldManager owns what the suite applies.
	fieldManager = "kcm-manifests-test"
	// kcmRole is the API server's built-in ClusterRole for kube-controller-manager's own
	// identity (kubeadm's user system:kube-controller-manager): all kcm's ServiceAccount gets.
	kcmRole = "system:kube-controller-manager"
)

// object is one document of a kustomize build.
type object struct {
	*unstructured.Unstructured
	raw []byte
}

func (o object) String() string { return o.GetKind() + "/" + o.GetName() }

// kustomize builds a kustomization directory (relative to the repository root, or absolute).
func kustomize(dir string) []byte {
	GinkgoHelper()
	return run(nil, kubectl, "kustomize", dir)
}

// parse splits a kustomize build into its documents.
func parse(out []byte) []object {
	GinkgoHelper()
	var objs []object
	for _, doc := range strings.Split(string(out), "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---\n")
		if doc == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed(), "document:\n%s", doc)
		Expect(u.GetKind()).NotTo(BeEmpty(), "document without a kind:\n%s", doc)
		objs = append(objs, object{Unstructured: u, raw: []byte(doc)})
	}
	Expect(objs).NotTo(BeEmpty(), "kustomize built nothing")
	return objs
}

// decode finds the one object of the kind and name and decodes it strictly into into, so that
// a misspelt field fails rather than vanishes.
func decode(objs []object, kind, name string, into any) {
	GinkgoHelper()
	var found []object
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			found = append(found, o)
		}
	}
	Expect(found).To(HaveLen(1), "want exactly one %s %s in %v", kind, name, objs)
	Expect(yaml.UnmarshalStrict(found[0].raw, into)).To(Succeed(), "decoding %s %s", kind, name)
}

// kcmContainer returns the Deployment's only container, kcm.
func kcmContainer(dep *appsv1.Deployment) corev1.Container {
	GinkgoHelper()
	Expect(dep.Spec.Template.Spec.Containers).To(HaveLen(1))
	c := dep.Spec.Template.Spec.Containers[0]
	Expect(c.Name).To(Equal(name))
	return c
}

// parseArgs parses the container's arguments as main does, so that a flag kcm does not know,
// or a bad value, fails here rather than in a crash-looping pod.
func parseArgs(c corev1.Container) *options.Options {
	GinkgoHelper()
	opts := options.New()
	Expect(opts.Parse(c.Args)).To(Succeed(), "kcm rejects the container's args %q", c.Args)
	_, err := setup.Select(controller.Registry(), opts.Controllers)
	Expect(err).NotTo(HaveOccurred())
	return opts
}

// portNumber resolves a probe's port, by number or by the name of one of the container's ports.
func portNumber(c corev1.Container, port intstr.IntOrString) int32 {
	GinkgoHelper()
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	Fail(fmt.Sprintf("probe port %q names no port of the container", port.StrVal))
	return 0
}

var _ = Describe("config/default built by kubectl kustomize", func() {
	var (
		objs []object
		dep  *appsv1.Deployment
		c    corev1.Container
	)
	BeforeEach(func() {
		objs = parse(kustomize("config/default"))
		dep = &appsv1.Deployment{}
		decode(objs, "Deployment", name, dep)
		c = kcmContainer(dep)
	})

	It("holds kcm's ServiceAccount, ClusterRoleBinding, Deployment and PodDisruptionBudget, and nothing else", func() {
		var got []string
		for _, o := range objs {
			got = append(got, o.String())
		}
		Expect(got).To(ConsistOf("ServiceAccount/kcm", "ClusterRoleBinding/kcm", "Deployment/kcm", "PodDisruptionBudget/kcm"))
	})

	It("puts every namespaced object in kube-system", func() {
		namespaced := 0
		for _, o := range objs {
			// The API server, not a list in this test, says which kinds are namespaced.
			isNamespaced, err := env.Client.IsObjectNamespaced(o.Unstructured)
			Expect(err).NotTo(HaveOccurred(), "%s", o)
			if isNamespaced {
				namespaced++
				Expect(o.GetNamespace()).To(Equal(namespace), "%s", o)
			} else {
				Expect(o.GetNamespace()).To(BeEmpty(), "cluster-scoped %s", o)
			}
		}
		Expect(namespaced).To(BeNumerically(">=", 2), "the ServiceAccount and the Deployment are namespaced")
	})

	It("runs two kcm replicas spread across nodes, with leader election on upstream's Lease", func() {
		Expect(dep.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "kcm"))
		Expect(dep.Labels).To(HaveKeyWithValue("component", "kube-controller-manager"))
		Expect(dep.Spec.Selector).NotTo(BeNil())
		Expect(dep.Spec.Template.Labels).To(Equal(dep.Spec.Selector.MatchLabels))
		Expect(dep.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		Expect(dep.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(ContainElement(
			HaveField("PodAffinityTerm.TopologyKey", "kubernetes.io/hostname")))

		Expect(c.Command).To(Equal([]string{"/kcm"}))
		Expect(c.Image).To(Equal("kcm:dev"))
		Expect(c.Args).To(ContainElement("--leader-elect=true"))
		opts := parseArgs(c)
		Expect(opts.LeaderElection.Enabled).To(BeTrue())
		// The same Lease as upstream kube-controller-manager: the two never act at once.
		Expect(opts.LeaderElection.ResourceNamespace).To(Equal("kube-system"))
		Expect(opts.LeaderElection.ResourceName).To(Equal("kube-controller-manager"))
	})

	It("runs every controller with its own ServiceAccount's credentials, as kubeadm does", func() {
		Expect(c.Args).To(ContainElement("--use-service-account-credentials=true"))
		Expect(parseArgs(c).Bool(options.UseServiceAccountCredentials)).To(BeTrue())
	})

	It("serves HTTPS on the secure port 10257, and probes /healthz there without credentials as kubeadm's static pod does", func() {
		Expect(c.Args).To(ContainElement(fmt.Sprintf("--secure-port=%d", securePort)))
		opts := parseArgs(c)
		Expect(opts.SecureServing.BindPort).To(BeEquivalentTo(securePort))
		// The authorizer kcm's secure port builds from --authorization-always-allow-paths.
		alwaysAllowed, err := path.NewAuthorizer(opts.Authorization.AlwaysAllowPaths)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", "probe-port"), HaveField("ContainerPort", BeEquivalentTo(securePort)))))

		// kubeadm's staticpodutil.LivenessProbe and StartupProbe (with its 4-minute
		// control-plane timeout) for kube-controller-manager: initial delay, period, timeout,
		// failure threshold.
		for probeName, tt := range map[string]struct {
			probe  *corev1.Probe
			timing [4]int32
		}{
			"liveness": {c.LivenessProbe, [4]int32{10, 10, 15, 8}},
			"startup":  {c.StartupProbe, [4]int32{10, 10, 15, 24}},
		} {
			probe := tt.probe
			Expect(probe).NotTo(BeNil(), "%s probe", probeName)
			Expect(probe.HTTPGet).NotTo(BeNil(), "%s probe", probeName)
			Expect(probe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS), "%s probe", probeName)
			Expect(probe.HTTPGet.Path).To(Equal("/healthz"), "%s probe", probeName)
			Expect(portNumber(c, probe.HTTPGet.Port)).To(BeEquivalentTo(securePort), "%s probe", probeName)
			Expect([4]int32{probe.InitialDelaySeconds, probe.PeriodSeconds, probe.TimeoutSeconds, probe.FailureThreshold}).
				To(Equal(tt.timing), "%s probe: initialDelaySeconds, periodSeconds, timeoutSeconds, failureThreshold", probeName)
			// The kubelet probes without credentials.
			decision, _, err := alwaysAllowed.Authorize(context.Background(), authorizer.AttributesRecord{Path: probe.HTTPGet.Path})
			Expect(err).NotTo(HaveOccurred())
			Expect(decision).To(Equal(authorizer.DecisionAllow),
				"%s probe path %s is not in --authorization-always-allow-paths %q", probeName, probe.HTTPGet.Path, opts.Authorization.AlwaysAllowPaths)
		}
		// As kubeadm: kcm serves no /readyz (upstream neither), and a readiness that only the
		// leader passed would leave the PodDisruptionBudget no replica to let go.
		Expect(c.ReadinessProbe).To(BeNil())
	})

	It("runs non-root on a read-only root file system, without privileges", func() {
		sc := c.SecurityContext
		Expect(sc).NotTo(BeNil())
		Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(sc.RunAsUser).To(HaveValue(BeEquivalentTo(65532)))
		Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(sc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))
		Expect(sc.Capabilities).NotTo(BeNil())
		Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))
		Expect(sc.Capabilities.Add).To(BeEmpty())
		Expect(sc.SeccompProfile).NotTo(BeNil())
		Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	})

	It("requests CPU and memory, and limits memory", func() {
		req, lim := c.Resources.Requests, c.Resources.Limits
		Expect(req).To(HaveKey(corev1.ResourceCPU))
		Expect(req).To(HaveKey(corev1.ResourceMemory))
		Expect(req.Cpu().IsZero()).To(BeFalse())
		Expect(req.Memory().IsZero()).To(BeFalse())
		Expect(lim).To(HaveKey(corev1.ResourceMemory))
		Expect(lim.Memory().Cmp(*req.Memory())).To(BeNumerically(">=", 0), "memory limit below the request")
	})

	It("schedules as a critical control-plane component, onto control-plane nodes by preference and any node else", func() {
		spec := dep.Spec.Template.Spec
		Expect(spec.ServiceAccountName).To(Equal(name))
		Expect(spec.PriorityClassName).To(Equal("system-cluster-critical"))
		Expect(spec.NodeSelector).To(BeEmpty())
		Expect(spec.Tolerations).To(ContainElement(SatisfyAll(
			HaveField("Key", "node-role.kubernetes.io/control-plane"),
			HaveField("Operator", corev1.TolerationOpExists),
			HaveField("Effect", Or(Equal(corev1.TaintEffectNoSchedule), BeEmpty())),
		)))
		// Preferred, not required: a cluster whose control plane runs no kubelet still runs kcm.
		Expect(spec.Affinity.NodeAffinity).NotTo(BeNil())
		Expect(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(BeNil())
		Expect(spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(ContainElement(
			HaveField("Preference.MatchExpressions", ContainElement(SatisfyAll(
				HaveField("Key", "node-role.kubernetes.io/control-plane"),
				HaveField("Operator", corev1.NodeSelectorOpExists),
			))),
		))
	})

	It("keeps one kcm pod through voluntary disruptions", func() {
		pdb := &policyv1.PodDisruptionBudget{}
		decode(objs, "PodDisruptionBudget", name, pdb)
		Expect(pdb.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromInt32(1))))
		Expect(pdb.Spec.MaxUnavailable).To(BeNil())
		Expect(pdb.Spec.Selector).NotTo(BeNil())
		Expect(pdb.Spec.Selector.MatchLabels).To(Equal(dep.Spec.Selector.MatchLabels))
		Expect(pdb.Spec.Selector.MatchExpressions).To(BeEmpty())
		Expect(*dep.Spec.Replicas).To(BeNumerically(">", pdb.Spec.MinAvailable.IntVal), "a drain could never evict a kcm pod")
	})

	It("binds exactly the built-in ClusterRole system:kube-controller-manager to the ServiceAccount kube-system/kcm that the Deployment runs as, and grants nothing else", func() {
		for _, o := range objs {
			if o.GetObjectKind().GroupVersionKind().Group == rbacv1.GroupName {
				Expect(o.String()).To(Equal("ClusterRoleBinding/"+name), "kcm defines no role and no other binding")
			}
		}
		crb := &rbacv1.ClusterRoleBinding{}
		decode(objs, "ClusterRoleBinding", name, crb)
		Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kcmRole}))
		Expect(crb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}))

		sa := &corev1.ServiceAccount{}
		decode(objs, "ServiceAccount", name, sa)
		Expect(sa.Namespace).To(Equal(crb.Subjects[0].Namespace))
		Expect(dep.Namespace).To(Equal(crb.Subjects[0].Namespace))
		Expect(dep.Spec.Template.Spec.ServiceAccountName).To(Equal(crb.Subjects[0].Name))
	})

	It("lets an overlay set the image and add flags the way its comment shows", func() {
		base := filepath.Join(root, "config", "default")
		dir := GinkgoT().TempDir()
		overlay := overlayFromComment(filepath.Join(base, "kustomization.yaml"), dir)
		Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), overlay, 0o644)).To(Succeed())

		built := parse(kustomize(dir))
		patched := &appsv1.Deployment{}
		decode(built, "Deployment", name, patched)
		pc := kcmContainer(patched)
		Expect(pc.Image).To(Equal("registry.example.com/kcm:v0.1.0"))
		Expect(len(pc.Args)).To(BeNumerically(">", len(c.Args)), "the overlay adds flags")
		Expect(pc.Args[:len(c.Args)]).To(Equal(c.Args), "the overlay keeps the base's flags")
		// The example's flags are flags kcm accepts.
		parseArgs(pc)
	})
})

// overlayFromComment extracts the example overlay from the comment of a kustomization.yaml
// (config/default's, or a component's) (between "my-overlay/kustomization.yaml:" and "# then") and points its
// paths, written from a directory two levels below the repository root, at config/ from dir.
func overlayFromComment(path, dir string) []byte {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var lines []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(line, "my-overlay/kustomization.yaml:"):
			in = true
		case in && strings.HasPrefix(line, "# then"):
			in = false
		case in:
			Expect(line).To(HavePrefix("#"), "the example overlay is one comment block")
			lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(line, "#"), "   "))
		}
	}
	example := strings.TrimSpace(strings.Join(lines, "\n"))
	Expect(example).To(And(ContainSubstring("../../config/default"), ContainSubstring("../../"+filepath.ToSlash(filepath.Dir(mustRel(root, path))))),
		"the example overlay in %s", path)
	config, err := filepath.Rel(dir, filepath.Join(root, "config"))
	Expect(err).NotTo(HaveOccurred())
	return []byte(strings.ReplaceAll(example, "../../config", config) + "\n")
}

func mustRel(base, target string) string {
	GinkgoHelper()
	rel, err := filepath.Rel(base, target)
	Expect(err).NotTo(HaveOccurred())
	return rel
}

var _ = Describe("config/default applied to kube-apiserver", Ordered, func() {
	ctx := context.Background()
	var manifest []byte
	BeforeAll(func() {
		manifest = kustomize("config/default")
	})

	apply := func(args ...string) string {
		GinkgoHelper()
		args = append([]string{"--kubeconfig=" + kubeconfig, "apply", "--server-side", "--field-manager=" + fieldManager}, args...)
		return string(run(manifest, kubectl, append(args, "-f", "-")...))
	}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	applied := []string{"serviceaccount/kcm", "clusterrolebinding.rbac.authorization.k8s.io/kcm", "deployment.apps/kcm", "poddisruptionbudget.policy/kcm"}

	It("passes a server-side dry run, which persists nothing", func() {
		out := apply("--dry-run=server")
		for _, o := range applied {
			Expect(out).To(ContainSubstring(o+" serverside-applied (server dry run)"), "kubectl said:\n%s", out)
		}
		err := env.Client.Get(ctx, key, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run created the Deployment (err %v)", err)
	})

	It("applies server-side, and the Deployment reads back as applied", func() {
		out := apply()
		for _, o := range applied {
			Expect(out).To(ContainSubstring(o+" serverside-applied"), "kubectl said:\n%s", out)
		}

		dep := &appsv1.Deployment{}
		Expect(env.Client.Get(ctx, key, dep)).To(Succeed())
		Expect(dep.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		c := kcmContainer(dep)
		Expect(c.Image).To(Equal("kcm:dev"))
		Expect(c.Args).To(ContainElements("--leader-elect=true", fmt.Sprintf("--secure-port=%d", securePort), "--use-service-account-credentials=true"))
		Expect(c.LivenessProbe).NotTo(BeNil())
		Expect(c.LivenessProbe.HTTPGet).NotTo(BeNil())
		Expect(c.LivenessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
		Expect(c.SecurityContext).NotTo(BeNil())
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(dep.Spec.Template.Spec.ServiceAccountName).To(Equal(name))
		Expect(dep.ManagedFields).To(ContainElement(SatisfyAll(
			HaveField("Manager", fieldManager),
			HaveField("Operation", metav1.ManagedFieldsOperationApply),
		)), "the Deployment was not server-side applied")

		Expect(env.Client.Get(ctx, key, &corev1.ServiceAccount{})).To(Succeed())
		Expect(env.Client.Get(ctx, key, &policyv1.PodDisruptionBudget{})).To(Succeed())
		crb := &rbacv1.ClusterRoleBinding{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, crb)).To(Succeed())
		Expect(crb.RoleRef.Name).To(Equal(kcmRole))
		// The role bound is the API server's own, which it creates at startup.
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: kcmRole}, &rbacv1.ClusterRole{})).To(Succeed())

		// Applying again changes nothing and does not conflict.
		Expect(apply()).To(ContainSubstring("deployment.apps/kcm serverside-applied"))
	})

	It("authorizes the ServiceAccount as kubeadm's system:kube-controller-manager, and for nothing more", func() {
		kcmSA := "system:serviceaccount:" + namespace + ":" + name
		lease := func(verb, leaseName string) authorizationv1.ResourceAttributes {
			return authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: leaseName}
		}
		for _, attrs := range []authorizationv1.ResourceAttributes{
			// Leader election on upstream's Lease.
			lease("get", "kube-controller-manager"),
			lease("update", "kube-controller-manager"),
			lease("create", ""),
			// The shared cache.
			{Namespace: "some-namespace", Verb: "list", Group: "apps", Resource: "deployments"},
			{Verb: "watch", Resource: "nodes"},
			{Verb: "list", Group: "example.com", Resource: "widgets"},
			// Events, as the manager records them.
			{Namespace: "some-namespace", Verb: "create", Group: "events.k8s.io", Resource: "events"},
			// --use-service-account-credentials: each controller's ServiceAccount and its tokens.
			{Namespace: namespace, Verb: "get", Resource: "serviceaccounts", Name: "deployment-controller"},
			{Namespace: namespace, Verb: "create", Resource: "serviceaccounts"},
			{Namespace: namespace, Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: "deployment-controller"},
			// Delegated authentication and authorization of the secure port, which reads the
			// API server's client CA and request-header settings at startup (a refusal would
			// stop kcm, as upstream).
			{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
			{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
			{Namespace: namespace, Verb: "get", Resource: "configmaps", Name: "extension-apiserver-authentication"},
			{Namespace: namespace, Verb: "watch", Resource: "configmaps"},
		} {
			Expect(allowed(ctx, kcmSA, attrs)).To(BeTrue(), "%s may not %+v", kcmSA, attrs)
		}
		// The controllers write as their own ServiceAccounts: kcm's own one does not, and its
		// Lease rights are upstream's Lease's only.
		for _, attrs := range []authorizationv1.ResourceAttributes{
			lease("update", "another-lease"),
			lease("delete", "kube-controller-manager"),
			{Namespace: "some-namespace", Verb: "create", Resource: "pods"},
			{Namespace: "some-namespace", Verb: "update", Group: "apps", Resource: "deployments"},
			{Namespace: "some-namespace", Verb: "get", Group: "apps", Resource: "deployments", Name: "web"},
			{Verb: "patch", Resource: "nodes", Name: "node-1"},
			{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		} {
			Expect(allowed(ctx, kcmSA, attrs)).To(BeFalse(), "%s may %+v", kcmSA, attrs)
		}
		// The check means something: RBAC denies another ServiceAccount of kube-system what
		// kcm's may do.
		Expect(allowed(ctx, "system:serviceaccount:"+namespace+":not-kcm", lease("update", "kube-controller-manager"))).To(BeFalse())
	})
})

// allowed asks the API server whether the ServiceAccount user may do attrs.
func allowed(ctx context.Context, user string, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	ns := strings.Split(user, ":")[2]
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	Expect(env.Client.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}
