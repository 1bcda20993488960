package cloudnode_test

import (
	"context"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// instances is the test's cloud: the instance behind each node name, found or not, and how
// often the controller asked for each.
type instances struct {
	mu      sync.Mutex
	byNode  map[string]cloudprovider.InstanceMetadata
	lookups map[string]int
}

// metadata is InstancesV2.InstanceMetadata: InstanceNotFound for a node without instance.
func (i *instances) metadata(_ context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.lookups[node.Name]++
	m, ok := i.byNode[node.Name]
	if !ok {
		return nil, cloudprovider.InstanceNotFound
	}
	m.NodeAddresses = append([]corev1.NodeAddress(nil), m.NodeAddresses...)
	m.AdditionalLabels = maps.Clone(m.AdditionalLabels)
	return &m, nil
}

// set gives node the instance m.
func (i *instances) set(node string, m cloudprovider.InstanceMetadata) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.byNode[node] = m
}

// setAddresses changes the addresses of node's instance.
func (i *instances) setAddresses(node string, addresses ...corev1.NodeAddress) {
	i.mu.Lock()
	defer i.mu.Unlock()
	m := i.byNode[node]
	m.NodeAddresses = addresses
	i.byNode[node] = m
}

// asked is how often the controller looked node's instance up.
func (i *instances) asked(node string) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lookups[node]
}
