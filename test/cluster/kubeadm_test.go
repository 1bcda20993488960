//go:build linux

package cluster

import (
	"slices"
	"testing"
)

func TestKubeadmArgsOverrides(t *testing.T) {
	c := &Cluster{ControllerManagerKubeconfig: "/d/controller-manager.conf", PKI: PKI{CA: "/d/pki/ca.crt"}}
	base := c.KubeadmArgs()
	if len(base) != 17 || !slices.Contains(base, "--kubeconfig=/d/controller-manager.conf") ||
		!slices.Contains(base, "--use-service-account-credentials=true") || !slices.Contains(base, "--root-ca-file=/d/pki/ca.crt") {
		t.Fatalf("kubeadm's 17 flags with the cluster's files expected, got %q", base)
	}
	got := c.KubeadmArgs("--controllers=deployment-controller", "--leader-elect=false", "--secure-port=1234")
	if len(got) != 18 {
		t.Fatalf("two flags replaced and one added expected, got %q", got)
	}
	// Given twice, --controllers would append to kubeadm's list rather than replace it.
	for _, gone := range []string{"--controllers=*,bootstrapsigner,tokencleaner", "--leader-elect=true"} {
		if slices.Contains(got, gone) {
			t.Errorf("%s not replaced: %q", gone, got)
		}
	}
	for _, want := range []string{"--controllers=deployment-controller", "--leader-elect=false", "--secure-port=1234"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing: %q", want, got)
		}
	}
}
