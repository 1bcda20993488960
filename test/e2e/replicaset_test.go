//go:build e2e && linux

package e2e_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Upstream's conformance spec "[sig-apps] ReplicaSet Replace and Patch tests", through
// kubectl: a ReplicaSet of one, scaled up and at once patched to three with a label,
// another image and a grace period of 0; the spec then watches by that label for the
// ReplicaSet with three ready and available replicas. kcm's status writes once took the label
// back (an unconditional status update from a cached copy older than the patch), and the
// ReplicaSet vanished from the watch.
var _ = Describe("ReplicaSets", func() {
	It("scaled twice in quick succession keep the patched label and report every pod ready (Replace and Patch)", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		manifest := filepath.Join(GinkgoT().TempDir(), "rs.yaml")
		Expect(os.WriteFile(manifest, []byte(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: test-rs
spec:
  replicas: 1
  selector:
    matchLabels:
      name: sample-pod
  template:
    metadata:
      labels:
        name: sample-pod
        pod: httpd
    spec:
      containers:
      - name: httpd
        image: `+pauseImage+`
`), 0o600)).To(Succeed())
		kubectl := func(args ...string) string {
			GinkgoHelper()
			out, err := runKubectl(ctx, append([]string{"-n", ns}, args...)...)
			Expect(err).NotTo(HaveOccurred(), "kubectl %v:\n%s\nlogs in %s", args, out, logDir)
			return out
		}
		kubectl("create", "-f", manifest)
		kubectl("wait", "rs/test-rs", "--for=jsonpath={.status.readyReplicas}=1", "--timeout=2m")

		// Scaled to 20 rather than the conformance spec's 2: the sync of the scale then creates
		// pods for longer than a kubectl process takes to start, so the patch lands while it
		// runs, as the conformance spec's back-to-back client calls do.
		kubectl("scale", "rs/test-rs", "--replicas=20")
		kubectl("patch", "rs/test-rs", "--type=strategic", "-p",
			`{"metadata":{"labels":{"test-rs":"patched"}},"spec":{"replicas":3,"template":{"spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"test-rs","image":"registry.k8s.io/pause:3.9"}]}}}}`)

		// As the conformance spec, by the patched label: a ReplicaSet that lost it is not found.
		kubectl("wait", "rs", "-l", "test-rs=patched", "--for=jsonpath={.status.readyReplicas}=3", "--timeout=2m")
		kubectl("wait", "rs", "-l", "test-rs=patched", "--for=jsonpath={.status.availableReplicas}=3", "--timeout=2m")
		Expect(kubectl("get", "rs", "-l", "test-rs=patched", "-o", "name")).To(Equal("replicaset.apps/test-rs\n"))
	})
})
