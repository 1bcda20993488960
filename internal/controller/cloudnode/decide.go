package cloudnode

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	cloudnodeutil "k8s.io/cloud-provider/node/helpers"
)

// The decisions of the controller, pure: which labels an initialised node still needs, what
// initialising a node changes on it, and which addresses its status should list.

// tainted reports whether the node still waits for the cloud provider: the kubelet (started
// with --cloud-provider=external) registers it with node.cloudprovider.kubernetes.io/uninitialized.
func tainted(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}

// labelPairs are upstream's label pairs of an initialised node: the beta label (primary) is
// the source of truth, and the GA one (secondary) is added or corrected from it.
var labelPairs = []struct{ primary, secondary string }{
	{corev1.LabelFailureDomainBetaZone, corev1.LabelTopologyZone},
	{corev1.LabelFailureDomainBetaRegion, corev1.LabelTopologyRegion},
	{corev1.LabelInstanceType, corev1.LabelInstanceTypeStable},
}

// labelsToReconcile are the GA labels an initialised node lacks or holds with another value
// than its beta label (nil: none).
func labelsToReconcile(labels map[string]string) map[string]string {
	var out map[string]string
	for _, p := range labelPairs {
		primary, ok := labels[p.primary]
		if !ok {
			continue
		}
		if secondary, ok := labels[p.secondary]; ok && secondary == primary {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[p.secondary] = primary
	}
	return out
}

// kubernetesNamespace matches label keys in the kubernetes.io and k8s.io namespaces, which a
// provider's additional labels may not use.
var kubernetesNamespace = regexp.MustCompile(`(^|\.)(kubernetes|k8s)\.io/`)

// discardedLabel is an additional label of the provider that initialise left out, and why.
type discardedLabel struct {
	Key    string
	Reason string
}

// initialise applies the provider's metadata to node, as upstream's node modifiers do: the
// provider ID when the node has none, the instance type, zone and region labels (beta and
// GA), the provider's additional labels (none in a Kubernetes namespace, none overwriting one
// the node has), and the taint removed. It returns the additional labels it discarded, which
// upstream logs as warnings (one the node already has with the same value is no discard).
func initialise(node *corev1.Node, meta *cloudprovider.InstanceMetadata) []discardedLabel {
	if node.Spec.ProviderID == "" && meta.ProviderID != "" {
		node.Spec.ProviderID = meta.ProviderID
	}
	set := func(value string, keys ...string) {
		if value == "" {
			return
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for _, k := range keys {
			node.Labels[k] = value
		}
	}
	set(meta.InstanceType, corev1.LabelInstanceType, corev1.LabelInstanceTypeStable)
	set(meta.Zone, corev1.LabelFailureDomainBetaZone, corev1.LabelTopologyZone)
	set(meta.Region, corev1.LabelFailureDomainBetaRegion, corev1.LabelTopologyRegion)
	var discarded []discardedLabel
	for k, v := range meta.AdditionalLabels {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		switch old, ok := node.Labels[k]; {
		case kubernetesNamespace.MatchString(k):
			discarded = append(discarded, discardedLabel{k, "kubernetes namespace"})
		case ok && old != v:
			discarded = append(discarded, discardedLabel{k, "already present"})
		case !ok:
			node.Labels[k] = v
		}
	}
	taints := []corev1.Taint{}
	for _, t := range node.Spec.Taints {
		if t.Key != cloudproviderapi.TaintExternalCloudProvider {
			taints = append(taints, t)
		}
	}
	node.Spec.Taints = taints
	return discarded
}

// providedAddresses applies the kubelet's --node-ip (the alpha.kubernetes.io/provided-node-ip
// annotation) to the provider's addresses: each given IP must be among them, and is then the
// only address of its type. Without the annotation the provider's addresses stand.
func providedAddresses(node *corev1.Node, cloudAddresses []corev1.NodeAddress) ([]corev1.NodeAddress, error) {
	ip, ok := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]
	if !ok {
		return cloudAddresses, nil
	}
	return cloudnodeutil.GetNodeAddressesFromNodeIP(ip, cloudAddresses)
}

// addressesToWrite are the addresses the node's status should list, from the provider's:
// the node's own Hostname address kept when the provider gives none, the kubelet's node IP
// enforced. write is false when the provider gave no address or the node already lists the
// same address for each type (upstream's comparison, by type).
func addressesToWrite(node *corev1.Node, cloudAddresses []corev1.NodeAddress) (addresses []corev1.NodeAddress, write bool, err error) {
	if len(cloudAddresses) == 0 {
		return nil, false, nil
	}
	addresses = append([]corev1.NodeAddress(nil), cloudAddresses...)
	if !hasType(addresses, corev1.NodeHostName) {
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeHostName {
				addresses = append(addresses, a)
			}
		}
	}
	addresses, err = providedAddresses(node, addresses)
	if err != nil {
		return nil, false, fmt.Errorf("failed to update node addresses for node %q: %w", node.Name, err)
	}
	return addresses, addressesChanged(node.Status.Addresses, addresses), nil
}

func hasType(addresses []corev1.NodeAddress, t corev1.NodeAddressType) bool {
	for _, a := range addresses {
		if a.Type == t {
			return true
		}
	}
	return false
}

// addressesChanged is upstream's nodeAddressesChangeDetected: the lists differ in length, or
// an address of the new list is not the (last) one of its type in the old.
func addressesChanged(old, updated []corev1.NodeAddress) bool {
	if len(old) != len(updated) {
		return true
	}
	byType := map[corev1.NodeAddressType]string{}
	for _, a := range old {
		byType[a.Type] = a.Address
	}
	for _, a := range updated {
		if byType[a.Type] != a.Address {
			return true
		}
	}
	return false
}
