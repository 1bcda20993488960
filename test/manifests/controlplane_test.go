package manifests_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/options"
)

var _ = Describe("config/control-plane, kcm as a Deployment on kubeadm's control-plane nodes", func() {
	var (
		objs []object
		dep  *appsv1.Deployment
		spec corev1.PodSpec
		c    corev1.Container
	)
	BeforeEach(func() {
		objs = parse(kustomize("config/control-plane"))
		dep = &appsv1.Deployment{}
		decode(objs, "Deployment", name, dep)
		spec = dep.Spec.Template.Spec
		c = kcmContainer(dep)
	})

	It("has config/kubeadm's static pod's flags, but --bind-address=0.0.0.0", func() {
		static := readPod(filepath.Join(root, "config/kubeadm/kube-controller-manager.yaml"))
		want := append([]string(nil), static.Spec.Containers[0].Command[1:]...)
		replaced := 0
		for i, a := range want {
			if strings.HasPrefix(a, "--bind-address=") {
				// The pod has a network namespace of its own (no hostNetwork): on 127.0.0.1
				// the kubelet's probes would not reach it.
				want[i], replaced = "--bind-address=0.0.0.0", replaced+1
			}
		}
		Expect(replaced).To(Equal(1), "kubeadm's --bind-address")
		Expect(c.Command).To(Equal([]string{"/kcm"}))
		Expect(c.Args).To(Equal(want))
		opts := parseArgs(c)
		Expect(opts.SecureServing.BindPort).To(BeEquivalentTo(securePort), "kubeadm's port, which the base's probes use")
		Expect(spec.HostNetwork).To(BeFalse())
	})

	It("reads each file its flags name from the node's /etc/kubernetes at the same path, read-only, and mounts nothing else", func() {
		volumes := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = v
		}
		used := map[string]bool{}
		files := 0
		for _, a := range c.Args {
			flag, value, _ := strings.Cut(a, "=")
			if !strings.HasPrefix(value, "/") {
				continue
			}
			files++
			Expect(value).To(HavePrefix("/etc/kubernetes/"), "%s names a file kubeadm keeps", flag)
			var mount *corev1.VolumeMount
			for i, m := range c.VolumeMounts {
				if m.MountPath == value {
					mount = &c.VolumeMounts[i]
				}
			}
			Expect(mount).NotTo(BeNil(), "%s=%s: no mount of that file", flag, value)
			Expect(mount.ReadOnly).To(BeTrue(), "%s", value)
			v, ok := volumes[mount.Name]
			Expect(ok).To(BeTrue(), "volume %s", mount.Name)
			Expect(v.HostPath).NotTo(BeNil(), "%s from the node", value)
			Expect(v.HostPath.Path).To(Equal(value), "the node's file at the path the flag names, as kubeadm's static pod sees it")
			// File: a node without it fails the pod, rather than mounting an empty directory.
			Expect(v.HostPath.Type).To(HaveValue(Equal(corev1.HostPathFile)), "%s", value)
			used[mount.Name] = true
		}
		// controller-manager.conf (three flags), ca.crt (three), ca.key, sa.key, front-proxy-ca.crt.
		Expect(files).To(Equal(9))
		Expect(used).To(HaveLen(5))
		Expect(c.VolumeMounts).To(HaveLen(len(used)), "mounts no flag needs")
		Expect(spec.Volumes).To(HaveLen(len(used)), "volumes no flag needs")
	})

	It("acts as kubeadm's user from controller-manager.conf: no ServiceAccount, binding or token", func() {
		var got []string
		for _, o := range objs {
			got = append(got, o.String())
		}
		Expect(got).To(ConsistOf("Deployment/kcm", "PodDisruptionBudget/kcm"))
		Expect(spec.ServiceAccountName).To(BeEmpty())
		Expect(spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		Expect(parseArgs(c).Bool(options.UseServiceAccountCredentials)).To(BeTrue(), "each controller as its own ServiceAccount, as kubeadm's")
	})

	It("runs as root, which reads kubeadm's 0600 files as their owner, with no capability, privilege or writable root file system", func() {
		Expect(spec.SecurityContext.RunAsNonRoot).To(BeNil())
		sc := c.SecurityContext
		Expect(sc.RunAsNonRoot).To(BeNil())
		Expect(sc.RunAsUser).To(HaveValue(BeEquivalentTo(0)))
		Expect(sc.RunAsGroup).To(HaveValue(BeEquivalentTo(0)))
		Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(sc.Capabilities.Add).To(BeEmpty())
		Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(sc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))
		Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(spec.HostPID || spec.HostIPC || spec.HostNetwork).To(BeFalse())
	})

	It("runs on control-plane nodes only, at most one replica a node", func() {
		Expect(dep.Namespace).To(Equal(namespace))
		aff := spec.Affinity
		Expect(aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(BeEmpty())
		Expect(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms).To(ConsistOf(
			HaveField("MatchExpressions", ConsistOf(corev1.NodeSelectorRequirement{
				Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpExists}))))
		Expect(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(BeEmpty())
		Expect(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(SatisfyAll(
			HaveField("TopologyKey", "kubernetes.io/hostname"),
			HaveField("LabelSelector.MatchLabels", Equal(dep.Spec.Selector.MatchLabels)))))
		Expect(spec.Tolerations).To(ContainElement(corev1.Toleration{
			Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}))
		Expect(dep.Spec.Replicas).To(Equal(ptr.To[int32](2)))
	})
})
