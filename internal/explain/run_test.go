package explain_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/explain"
)

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs `kcm explain args...` with the kubeconfig.
func run(kubeconfig string, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := explain.Run(append(args, "--kubeconfig="+kubeconfig), &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func report(r result) explain.Report {
	GinkgoHelper()
	var rep explain.Report
	Expect(json.Unmarshal([]byte(r.stdout), &rep)).To(Succeed(), "%s", r)
	return rep
}

// expectError: exit 2, nothing on stdout, one line on stderr naming what.
func expectError(r result, what string) {
	GinkgoHelper()
	Expect(r.code).To(Equal(explain.ExitError), "%s", r)
	Expect(r.stdout).To(BeEmpty(), "%s", r)
	line := strings.TrimSuffix(r.stderr, "\n")
	Expect(line).To(HavePrefix("kcm explain: "), "%s", r)
	Expect(line).NotTo(ContainSubstring("\n"), "one line: %s", r)
	Expect(line).To(ContainSubstring(what), "%s", r)
}

var _ = Describe("kcm explain", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = env.Namespace(ctx, "explain") })

	It("names a ReplicaSet's FailedCreate for a Deployment, in -o json and the tree's first line, exit 1", func(ctx SpecContext) {
		labels := map[string]string{"app": "web"}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}}}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: d.Spec.Selector, Template: tmpl}}
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		const quota = `pods "web-1-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`
		Expect(env.Client.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", APIVersion: "apps/v1", Namespace: ns, Name: rs.Name, UID: rs.UID},
			Type:           corev1.EventTypeWarning, Reason: "FailedCreate", Message: "Error creating: " + quota,
			Source: corev1.EventSource{Component: "replicaset-controller"}, LastTimestamp: metav1.Now(), Count: 1})).To(Succeed())

		for _, target := range []string{"deployment/web", "deploy/web", "deployments/web", "deployment.apps/web"} {
			r := run(admin, target, "-n", ns, "-o", "json")
			Expect(r.code).To(Equal(explain.ExitNotConverged), "%s: %s", target, r)
			rep := report(r)
			Expect(rep.Object).To(Equal(explain.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}))
			Expect(rep.Status).To(Equal(explain.InProgress))
			Expect(rep.Converged).To(BeFalse())
			Expect(rep.Causes).NotTo(BeEmpty(), "%s", r)
			Expect(rep.Causes[0]).To(Equal(explain.Cause{Object: explain.Ref{Kind: "ReplicaSet", Namespace: ns, Name: "web-1"},
				Reason: "FailedCreate", Message: "Error creating: " + quota}))
			Expect(rep.Summary).To(Equal("Deployment/web InProgress: FailedCreate on ReplicaSet/web-1: Error creating: " + quota))
			Expect(rep.Tree.Controller).To(Equal("deployment-controller"))
			Expect(rep.Tree.Rule).To(HaveField("Converged", false), "deployment-controller's own rule")
			Expect(rep.Tree.Children).To(HaveExactElements(And(HaveField("Object.Name", "web-1"), HaveField("Controller", "replicaset-controller"),
				HaveField("Desired", "3 replicas"))))
			// No kcm runs: the Lease is missing, the tree is the API's view.
			Expect(rep.Leader).NotTo(BeNil())
			Expect(rep.Leader.Error).To(ContainSubstring("kube-controller-manager"))
		}
		tree := run(admin, "deployment/web", "-n", ns)
		GinkgoWriter.Println(tree.stdout)
		Expect(tree.code).To(Equal(explain.ExitNotConverged), "%s", tree)
		first, rest, _ := strings.Cut(tree.stdout, "\n")
		Expect(first).To(HavePrefix("Deployment/web InProgress: FailedCreate on ReplicaSet/web-1: "))
		Expect(rest).To(ContainSubstring("ReplicaSet/web-1  InProgress  [replicaset-controller]"))
		Expect(rest).To(ContainSubstring("cause: FailedCreate: Error creating: " + quota))
	})

	It("says Current and exits 0 for a converged object; the namespace defaults to the context's", func(ctx SpecContext) {
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})).To(Succeed())
		r := run(admin, "cm/settings", "-n", ns, "-o", "yaml")
		Expect(r.code).To(Equal(explain.ExitConverged), "%s", r)
		Expect(r.stdout).To(ContainSubstring("summary: 'ConfigMap/settings Current: "))
		r = run(admin, "namespace", ns)
		Expect(r.code).To(Equal(explain.ExitConverged), "%s", r)
		Expect(r.stdout).To(HavePrefix("Namespace/" + ns + " Current"))
		Expect(run(admin, "ns/default").code).To(Equal(explain.ExitConverged))
		// The context has no namespace: "default", where the object is not.
		expectError(run(admin, "configmap/settings"), `"settings" not found in namespace "default"`)
	})

	It("refuses bad input with one line on stderr and exit 2", func(ctx SpecContext) {
		expectError(run(admin, "frobnicator/x", "-n", ns), `doesn't have a resource type "frobnicator"`)
		expectError(run(admin, "deployment/nothing-here", "-n", ns), `"nothing-here" not found`)
		expectError(run(admin, "deployment/web", "-n", ns, "-o", "wide"), `unknown output format "wide"`)
		expectError(run(admin, "deployment", "-n", ns), "want one object, TYPE/NAME")
		expectError(run(admin, "deployment/web", "--no-such-flag"), "unknown flag: --no-such-flag")
		expectError(run(nobody, "configmap/kube-root-ca.crt", "-n", ns), "forbidden")

		By("an unreachable --kcm-url: the address in the line")
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		closed := l.Addr().String()
		Expect(l.Close()).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}})).To(Succeed())
		expectError(run(admin, "service/kubernetes", "-n", "default", "--kcm-url", "https://"+closed, "--kcm-insecure-skip-tls-verify"), closed)
	})

	It("prints its usage on -h, exit 0", func() {
		r := run(admin, "-h")
		Expect(r.code).To(Equal(explain.ExitConverged))
		Expect(r.stdout).To(ContainSubstring("Usage: kcm explain TYPE/NAME"))
		Expect(r.stdout).To(ContainSubstring("--kcm-url"))
	})
})

var _ = Describe("kcm explain on a Terminating Namespace", func() {
	It("lists every namespaced resource in it and names the custom resource and finalizer that hold it", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "held")
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.explain.kcm.test"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "explain.kcm.test", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}}}
		_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
		Expect(err).NotTo(HaveOccurred())
		widget := &unstructured.Unstructured{}
		widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "explain.kcm.test", Version: "v1", Kind: "Widget"})
		widget.SetNamespace(ns)
		widget.SetName("held")
		widget.SetFinalizers([]string{"example.com/hold"})
		Expect(env.Client.Create(ctx, widget)).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "free"}})).To(Succeed())

		// No namespace-controller runs: the namespace stays Terminating with all its content.
		Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		r := run(admin, "ns/"+ns, "-o", "json")
		Expect(r.code).To(Equal(explain.ExitNotConverged), "%s", r)
		rep := report(r)
		Expect(rep.Status).To(Equal(explain.Terminating))
		Expect(rep.Causes).NotTo(BeEmpty(), "%s", r)
		Expect(rep.Causes[0]).To(Equal(explain.Cause{Object: explain.Ref{Kind: "Widget", Namespace: ns, Name: "held"}, Reason: "Finalizer",
			Finalizer: "example.com/hold", Message: "Widget/held still has finalizer example.com/hold, held by the controller that owns it (not one of kcm's)"}))
		Expect(rep.Summary).To(Equal("Namespace/" + ns + " Terminating: Finalizer on Widget/held: Widget/held still has finalizer example.com/hold, held by the controller that owns it (not one of kcm's)"))
		Expect(rep.Tree.Controller).To(Equal("namespace-controller"))
		Expect(rep.Tree.Actual).To(Equal("1 configmaps, 1 widgets.explain.kcm.test remain"))
		Expect(rep.Tree.Children).To(HaveExactElements(HaveField("Object", explain.Ref{Kind: "Widget", Namespace: ns, Name: "held"})),
			"only the objects holding finalizers are named")
	})
})

var _ = Describe("kcm explain on a StatefulSet", func() {
	It("walks its pods and claims: a pod bound to a missing node first, then the claim's FailedBinding, then the ordinal it waits on", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "sts")
		labels := map[string]string{"app": "db"}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db"}}}},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}}
		Expect(env.Client.Create(ctx, sts)).To(Succeed())
		owner := []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0", Labels: labels, OwnerReferences: owner},
			Spec: corev1.PodSpec{NodeName: "gone", Containers: []corev1.Container{{Name: "db", Image: "db"}}}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-0"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(""), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		// Another set's claim, not this one's.
		other := claim.DeepCopy()
		other.ResourceVersion, other.Name = "", "data-dbx-0"
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		const noVolume = "no persistent volumes available for this claim and no storage class is set"
		Expect(env.Client.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-0.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim.Name, UID: claim.UID},
			Type:           corev1.EventTypeNormal, Reason: "FailedBinding", Message: noVolume,
			Source: corev1.EventSource{Component: "persistentvolume-controller"}, LastTimestamp: metav1.Now(), Count: 1})).To(Succeed())

		r := run(admin, "sts/db", "-n", ns, "-o", "json")
		Expect(r.code).To(Equal(explain.ExitNotConverged), "%s", r)
		rep := report(r)
		Expect(rep.Causes).To(HaveExactElements(
			explain.Cause{Object: explain.Ref{Kind: "Pod", Namespace: ns, Name: "db-0"}, Reason: "NodeMissing", Message: "bound to node gone, which does not exist"},
			explain.Cause{Object: explain.Ref{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data-db-0"}, Reason: "FailedBinding", Message: noVolume},
			explain.Cause{Object: explain.Ref{Kind: "Pod", Namespace: ns, Name: "db-0"}, Reason: "NotReady",
				Message: "waiting for pod db-0 to be Ready (Pending, not ready): the StatefulSet is OrderedReady"}), "%s", r)
		Expect(rep.Summary).To(Equal("StatefulSet/db InProgress: NodeMissing on Pod/db-0: bound to node gone, which does not exist"))
		Expect(rep.Tree.Controller).To(Equal("statefulset-controller"))
		Expect(rep.Tree.Children).To(HaveExactElements(
			HaveField("Object", explain.Ref{Kind: "Pod", Namespace: ns, Name: "db-0"}),
			And(HaveField("Object", explain.Ref{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data-db-0"}),
				HaveField("Controller", "persistentvolume-binder-controller-claims"))))
	})
})
