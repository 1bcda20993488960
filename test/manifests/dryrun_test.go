package manifests_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// monitoringCRDs stands in for prometheus-operator's CustomResourceDefinitions of the kinds
// config/prometheus holds, with their group, versions, names and scope, but no schema: the
// API server then checks what it checks of any object (kind, names, namespace), and
// test/monitoring checks the rules with promtool.
const monitoringCRDs = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

var _ = Describe("Everything under config/", Ordered, func() {
	BeforeAll(func() {
		run([]byte(monitoringCRDs), kubectl, "--kubeconfig="+kubeconfig, "apply", "-f", "-")
		run(nil, kubectl, "--kubeconfig="+kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
			"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
	})

	// dryRun applies a manifest server-side with --dry-run=server and expects every one of its
	// objects accepted, persisting nothing.
	dryRun := func(what string, manifest []byte) {
		GinkgoHelper()
		objs := parse(manifest)
		out := string(run(manifest, kubectl, "--kubeconfig="+kubeconfig, "apply", "--server-side",
			"--field-manager="+fieldManager, "--dry-run=server", "-f", "-"))
		Expect(strings.Count(out, "serverside-applied (server dry run)")).To(Equal(len(objs)),
			"%s: every one of %v accepted; kubectl said:\n%s", what, objs, out)
	}

	It("applies with kubectl apply --server-side --dry-run=server: each kustomization (a Component as part of an overlay of config/default) and the static pod", func() {
		var dirs []string
		Expect(filepath.WalkDir(filepath.Join(root, "config"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "kustomization.yaml" {
				dirs = append(dirs, filepath.Dir(path))
			}
			return err
		})).To(Succeed())
		// What the README's deploy section names; a new directory joins by itself.
		Expect(dirs).To(ContainElements(filepath.Join(root, "config/default"), filepath.Join(root, "config/control-plane"),
			filepath.Join(root, "config/cloud-pool"), filepath.Join(root, "config/prometheus")))

		for _, dir := range dirs {
			rel := mustRel(root, dir)
			By(rel)
			data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
			Expect(err).NotTo(HaveOccurred())
			var k struct{ Kind string }
			Expect(yaml.Unmarshal(data, &k)).To(Succeed())
			if k.Kind != "Component" {
				dryRun(rel, kustomize(dir))
				continue
			}
			// A Component is used from an overlay, as their comments show.
			overlay := GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("resources:\n- "+
				mustRel(overlay, filepath.Join(root, "config/default"))+"\ncomponents:\n- "+mustRel(overlay, dir)+"\n"), 0o644)).To(Succeed())
			dryRun(rel+" over config/default", kustomize(overlay))
		}

		static, err := os.ReadFile(filepath.Join(root, "config/kubeadm/kube-controller-manager.yaml"))
		Expect(err).NotTo(HaveOccurred())
		dryRun("config/kubeadm", static)
	})
})
