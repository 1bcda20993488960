package nodeipam

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-logr/logr"
	netutils "k8s.io/utils/net"
)

// Upstream's allocator types (--cidr-allocator-type). kcm, as upstream's kube-controller-manager
// since v1.31, has no cloud provider: only the range allocator runs.
const (
	rangeAllocatorType           = "RangeAllocator"
	cloudAllocatorType           = "CloudAllocator"
	ipamFromClusterAllocatorType = "IPAMFromCluster"
	ipamFromCloudAllocatorType   = "IPAMFromCloud"
)

// Upstream's node CIDR mask sizes when no flag sets them.
const (
	defaultNodeMaskIPv4 = 24
	defaultNodeMaskIPv6 = 64
)

// flags are the command line's values node-ipam-controller reads.
type flags struct {
	allocatorType string
	clusterCIDR   string
	serviceRange  string
	maskSize      int32
	maskSizeIPv4  int32
	maskSizeIPv6  int32
}

// config is what the allocator is built from: the cluster CIDRs (one per family), the node
// CIDR mask size of each, and the service ranges kept out of them.
type config struct {
	clusterCIDRs []*net.IPNet
	maskSizes    []int
	serviceCIDRs []*net.IPNet
}

// parseFlags checks the flags as upstream's startNodeIpamController and
// NewNodeIpamController do, in their order and with their messages: any error stops kcm.
func parseFlags(f flags, logger logr.Logger) (config, error) {
	if f.allocatorType == cloudAllocatorType {
		return config{}, errors.New("--cidr-allocator-type is set to 'CloudAllocator' but cloud provider is not configured")
	}
	clusterCIDRs, err := parseClusterCIDRs(f.clusterCIDR)
	if err != nil {
		return config{}, err
	}
	// Upstream splits --service-cluster-ip-range at commas into a primary and a secondary
	// range; one that does not parse is only warned about.
	ranges := strings.Split(f.serviceRange, ",")
	if len(ranges) > 2 {
		return config{}, errors.New("--service-cluster-ip-range can not contain more than two entries")
	}
	var serviceCIDRs []*net.IPNet
	for _, r := range ranges {
		if strings.TrimSpace(r) == "" {
			continue
		}
		_, cidr, err := netutils.ParseCIDRSloppy(r)
		if err != nil {
			logger.Info("Warning: unsuccessful parsing of service CIDR", "CIDR", r, "err", err)
			continue
		}
		serviceCIDRs = append(serviceCIDRs, cidr)
	}
	if len(serviceCIDRs) == 2 {
		dual, err := netutils.IsDualStackCIDRs(serviceCIDRs)
		if err != nil {
			return config{}, fmt.Errorf("failed to perform dualstack check on serviceCIDR and secondaryServiceCIDR error: %w", err)
		}
		if !dual {
			return config{}, errors.New("serviceCIDR and secondaryServiceCIDR are not dualstack (from different IPfamiles)")
		}
	}
	maskSizes, err := nodeMaskSizes(f, clusterCIDRs)
	if err != nil {
		return config{}, err
	}
	for i, cidr := range clusterCIDRs {
		if ones, _ := cidr.Mask.Size(); ones > maskSizes[i] {
			return config{}, errors.New("Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size configured for CIDR family")
		}
	}
	switch f.allocatorType {
	case ipamFromClusterAllocatorType, ipamFromCloudAllocatorType:
		return config{}, errors.New("Error trying to Init(): legacy cloud provider support disabled at build time")
	case rangeAllocatorType:
	default:
		return config{}, fmt.Errorf("invalid CIDR allocator type: %v", f.allocatorType)
	}
	return config{clusterCIDRs: clusterCIDRs, maskSizes: maskSizes, serviceCIDRs: serviceCIDRs}, nil
}

// parseClusterCIDRs is --cluster-cidr: one CIDR, or two of different families.
func parseClusterCIDRs(list string) ([]*net.IPNet, error) {
	cidrs, err := netutils.ParseCIDRs(strings.Split(strings.TrimSpace(list), ","))
	if err != nil {
		return nil, err
	}
	dual, _ := netutils.IsDualStackCIDRs(cidrs)
	if len(cidrs) > 1 && !dual {
		return nil, fmt.Errorf("len of ClusterCIDRs==%v and they are not configured as dual stack (at least one from each IPFamily", len(cidrs))
	}
	if len(cidrs) > 2 {
		return nil, fmt.Errorf("length of clusterCIDRs is:%v more than max allowed of 2", len(cidrs))
	}
	return cidrs, nil
}

// nodeMaskSizes is the node CIDR mask size of each cluster CIDR: --node-cidr-mask-size for a
// single-stack cluster, or the per-family flags, each defaulting to 24 and 64.
func nodeMaskSizes(f flags, cidrs []*net.IPNet) ([]int, error) {
	v4, v6 := defaultNodeMaskIPv4, defaultNodeMaskIPv6
	switch {
	case len(cidrs) > 1:
		if f.maskSize != 0 {
			return nil, errors.New("usage of --node-cidr-mask-size is not allowed with dual-stack clusters")
		}
		if f.maskSizeIPv4 != 0 {
			v4 = int(f.maskSizeIPv4)
		}
		if f.maskSizeIPv6 != 0 {
			v6 = int(f.maskSizeIPv6)
		}
	case f.maskSize != 0:
		if f.maskSizeIPv4 != 0 || f.maskSizeIPv6 != 0 {
			return nil, errors.New("usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use IPFamily specific flags")
		}
		v4, v6 = int(f.maskSize), int(f.maskSize)
	default:
		// Each family's flag is refused on a cluster of the other family, the IPv4 one first.
		if f.maskSizeIPv4 != 0 {
			if netutils.IsIPv6CIDR(cidrs[0]) {
				return nil, errors.New("usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster")
			}
			v4 = int(f.maskSizeIPv4)
		}
		if f.maskSizeIPv6 != 0 {
			if !netutils.IsIPv6CIDR(cidrs[0]) {
				return nil, errors.New("usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster")
			}
			v6 = int(f.maskSizeIPv6)
		}
	}
	sizes := make([]int, len(cidrs))
	for i, cidr := range cidrs {
		sizes[i] = v4
		if netutils.IsIPv6CIDR(cidr) {
			sizes[i] = v6
		}
	}
	return sizes, nil
}
