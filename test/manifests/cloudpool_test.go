package manifests_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/options"
)

var _ = Describe("config/cloud-pool, the pool provider's kustomize component", func() {
	const component = "config/cloud-pool"

	It("adds --cloud-provider=pool and the sample address pools to config/default, the way its comment shows", func() {
		baseDep := &appsv1.Deployment{}
		decode(parse(kustomize("config/default")), "Deployment", name, baseDep)
		baseArgs := kcmContainer(baseDep).Args

		dir := GinkgoT().TempDir()
		overlay := overlayFromComment(filepath.Join(root, component, "kustomization.yaml"), dir)
		Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), overlay, 0o644)).To(Succeed())
		objs := parse(kustomize(dir))

		var got []string
		for _, o := range objs {
			got = append(got, o.String())
		}
		Expect(got).To(ConsistOf("ServiceAccount/kcm", "ClusterRoleBinding/kcm", "Deployment/kcm", "PodDisruptionBudget/kcm",
			"ConfigMap/"+pool.DefaultConfigMap), "config/default's objects and the pools, and no role: kcm reads them as itself")

		dep := &appsv1.Deployment{}
		decode(objs, "Deployment", name, dep)
		c := kcmContainer(dep)
		Expect(c.Args).To(Equal(append(baseArgs, "--cloud-provider=pool")), "the base's flags, then the provider")
		Expect(parseArgs(c).String(options.CloudProvider)).To(Equal(pool.ProviderName))

		cm := &corev1.ConfigMap{}
		decode(objs, "ConfigMap", pool.DefaultConfigMap, cm)
		Expect(cm.Namespace).To(Equal(pool.ConfigMapNamespace), "where the provider reads it")
		Expect(cm.Data).To(HaveKey(pool.PoolsKey))
		// The provider's own parser: a sample it refused would fail every Service.
		pools, err := pool.ParsePools(cm.Namespace+"/"+cm.Name, cm.Data[pool.PoolsKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(pools).NotTo(BeEmpty())
	})

	It("has address pools that apply alone with kubectl, as its comment says", func() {
		file := filepath.Join(component, "address-pools.yaml")
		data, err := os.ReadFile(filepath.Join(root, file))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring("kubectl apply -f " + file))
		out := string(run(nil, kubectl, "--kubeconfig="+kubeconfig, "apply", "--dry-run=server", "-f", file))
		Expect(out).To(ContainSubstring("configmap/" + pool.DefaultConfigMap + " created (server dry run)"))
	})
})
