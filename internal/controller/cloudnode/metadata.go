package cloudnode

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// What the provider says about a node's instance: through InstancesV2 when the provider has
// it, else through Instances (by provider ID, then by node name) and Zones, as upstream.

// instanceMetadata is what initialising node needs from the provider. A provider may answer
// nil metadata (the node is then left alone); an error (the instance not found among them)
// leaves the node tainted and its sync retried.
func instanceMetadata(ctx context.Context, cloud cloudprovider.Interface, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	// The kubelet may set the provider ID (--provider-id); once set it is immutable.
	providerID := node.Spec.ProviderID
	if v2, ok := cloud.InstancesV2(); v2 != nil && ok {
		meta, err := v2.InstanceMetadata(ctx, node)
		if err != nil {
			return nil, err
		}
		// Other controllers (load balancers) need spec.providerID, and it is only ever set
		// here, at initialisation: without one the node stays tainted.
		if meta != nil && meta.ProviderID == "" {
			if providerID == "" {
				return meta, fmt.Errorf("cloud provider does not set node provider ID for node %s", node.Name)
			}
			meta.ProviderID = providerID
		}
		return meta, nil
	}

	instances, ok := cloud.Instances()
	if !ok {
		return nil, errors.New("failed to get instances from cloud provider")
	}
	if providerID == "" {
		id, err := cloudprovider.GetInstanceProviderID(ctx, cloud, types.NodeName(node.Name))
		switch {
		case errors.Is(err, cloudprovider.NotImplemented):
			// The only case a node goes without a provider ID: the provider has none, and
			// finds the instance by the node's name.
			log.FromContext(ctx).Info("Warning: cloud provider does not set node provider ID, using node name to discover node")
		case err != nil:
			// Retried: removing the taint now would never give the node its provider ID.
			return nil, err
		default:
			providerID = id
		}
	}
	addresses, err := addressesByProviderIDOrName(ctx, instances, providerID, node.Name)
	if err != nil {
		return nil, err
	}
	instanceType, err := instances.InstanceTypeByProviderID(ctx, providerID)
	if err != nil {
		byID := err
		if instanceType, err = instances.InstanceType(ctx, types.NodeName(node.Name)); err != nil {
			return nil, fmt.Errorf("InstanceType: Error fetching by providerID: %v Error fetching by NodeName: %v", byID, err)
		}
	}
	meta := &cloudprovider.InstanceMetadata{ProviderID: providerID, InstanceType: instanceType, NodeAddresses: addresses}
	zones, ok := cloud.Zones()
	if !ok {
		return meta, nil
	}
	zone, err := zones.GetZoneByProviderID(ctx, providerID)
	if err != nil {
		byID := err
		if zone, err = zones.GetZoneByNodeName(ctx, types.NodeName(node.Name)); err != nil {
			return nil, fmt.Errorf("failed to get zone from cloud provider: Zone: Error fetching by providerID: %v Error fetching by NodeName: %v", byID, err)
		}
	}
	meta.Zone, meta.Region = zone.FailureDomain, zone.Region
	return meta, nil
}

// instanceAddresses are the addresses the provider gives an initialised node's instance, for
// the periodic refresh: InstancesV2's metadata, or Instances' addresses alone (one call
// fewer than initialising).
func instanceAddresses(ctx context.Context, cloud cloudprovider.Interface, node *corev1.Node) ([]corev1.NodeAddress, error) {
	if v2, ok := cloud.InstancesV2(); v2 != nil && ok {
		meta, err := v2.InstanceMetadata(ctx, node)
		if err != nil || meta == nil {
			return nil, err
		}
		return meta.NodeAddresses, nil
	}
	instances, ok := cloud.Instances()
	if !ok {
		return nil, errors.New("failed to get instances from cloud provider")
	}
	return addressesByProviderIDOrName(ctx, instances, node.Spec.ProviderID, node.Name)
}

func addressesByProviderIDOrName(ctx context.Context, instances cloudprovider.Instances, providerID, nodeName string) ([]corev1.NodeAddress, error) {
	addresses, err := instances.NodeAddressesByProviderID(ctx, providerID)
	if err != nil {
		byID := err
		if addresses, err = instances.NodeAddresses(ctx, types.NodeName(nodeName)); err != nil {
			return nil, fmt.Errorf("error fetching node by provider ID: %v, and error by node name: %v", byID, err)
		}
	}
	return addresses, nil
}
