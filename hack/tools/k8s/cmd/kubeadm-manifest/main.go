// Command kubeadm-manifest prints the static pod manifest kubeadm v1.37.1 writes for
// kube-controller-manager (/etc/kubernetes/manifests/kube-controller-manager.yaml), rendered by
// kubeadm's own code for a v1beta4 ClusterConfiguration defaulted as `kubeadm init` defaults it,
// with networking.podSubnet 10.244.0.0/16 (so --allocate-node-cidrs and --cluster-cidr appear, as
// on a cluster set up for a CNI such as flannel).
package main

import (
	"fmt"
	v1 "k8s.io/api/core/v1"
	"os"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
	kubeadmapiv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubeadm-manifest:", err)
		os.Exit(1)
	}
}

func run() error {
	versioned := &kubeadmapiv1.ClusterConfiguration{
		KubernetesVersion: "v1.37.1",
		Networking:        kubeadmapiv1.Networking{PodSubnet: "10.244.0.0/16"},
	}
	kubeadmscheme.Scheme.Default(versioned)
	cfg := &kubeadmapi.ClusterConfiguration{}
	if err := kubeadmscheme.Scheme.Convert(versioned, cfg, nil); err != nil {
		return err
	}
	endpoint := &kubeadmapi.APIEndpoint{AdvertiseAddress: "192.168.0.10", BindPort: 6443}
	pods := controlplane.GetStaticPodSpecs(cfg, endpoint, nil)
	pod, ok := pods[kubeadmconstants.KubeControllerManager]
	if !ok {
		return fmt.Errorf("no %s in kubeadm's static pods", kubeadmconstants.KubeControllerManager)
	}
	out, err := kubeadmutil.MarshalToYaml(&pod, v1.SchemeGroupVersion)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
