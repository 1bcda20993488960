//go:build linux

package process_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/memlimit"
	"github.com/kcm/kcm/test/cluster"
)

var _ = Describe("The memory limit config/default gives kcm", func() {
	It("is read from the downward API as the kubelet resolves it, and Go's soft limit set to 90% of it", func() {
		// config/default's container, as rendered.
		dep, err := cluster.RenderDeployment(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), filepath.Join(root, "config/default"))
		Expect(err).NotTo(HaveOccurred())
		Expect(dep.Spec.Template.Spec.Containers).To(HaveLen(1))
		c := dep.Spec.Template.Spec.Containers[0]
		var ref *corev1.ResourceFieldSelector
		for _, e := range c.Env {
			if e.Name == memlimit.EnvVar && e.ValueFrom != nil {
				ref = e.ValueFrom.ResourceFieldRef
			}
		}
		Expect(ref).NotTo(BeNil(), "%s from a resourceFieldRef", memlimit.EnvVar)
		Expect(ref.Resource).To(Equal("limits.memory"))
		Expect(ref.Divisor.IsZero()).To(BeTrue(), "no divisor: bytes")
		limit := c.Resources.Limits.Memory()
		Expect(limit.IsZero()).To(BeFalse())
		// The kubelet's value for limits.memory with divisor 1: the limit in bytes, a decimal.
		value := strconv.FormatInt(limit.Value(), 10)

		env := []string{memlimit.EnvVar + "=" + value}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, memlimit.EnvVar+"=") {
				env = append(env, kv)
			}
		}
		p := startKCMEnv("kcm-memlimit", env, "--controllers=serviceaccount-token-controller")
		Eventually(p.Count("Starting kcm")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", p.State())
		lines := p.Lines("Set Go soft memory limit from the container's memory limit")
		Expect(lines).To(HaveLen(1), "logged once, right after Starting kcm")
		Expect(logField(lines[0], "bytes")).To(Equal([]string{strconv.FormatInt(int64(float64(limit.Value())*0.9), 10)}),
			"90%% of %s (%s bytes)", limit, value)

		// An explicit GOMEMLIMIT wins: no limit of kcm's own.
		q := startKCMEnv("kcm-gomemlimit", append(env, "GOMEMLIMIT=1GiB"), "--controllers=serviceaccount-token-controller")
		Eventually(q.Count("Starting kcm")).WithTimeout(30*time.Second).Should(Equal(1), "kcm: %s", q.State())
		Consistently(q.Count("Set Go soft memory limit")).WithTimeout(time.Second).Should(BeZero())
	})
})
