package nodeipam

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		f       flags
		want    string // clusterCIDRs/maskSizes/serviceCIDRs, when no error
		wantErr string
	}{
		{name: "single stack IPv4, default mask",
			f:    flags{clusterCIDR: "10.244.0.0/16"},
			want: "[10.244.0.0/16] [24] []"},
		{name: "dual stack, default masks, both service ranges",
			f:    flags{clusterCIDR: "10.244.0.0/16,fd00::/48", serviceRange: "10.96.0.0/12,fd00:10:96::/108"},
			want: "[10.244.0.0/16 fd00::/48] [24 64] [10.96.0.0/12 fd00:10:96::/108]"},
		{name: "dual stack, per-family masks, IPv6 first",
			f:    flags{clusterCIDR: "fd00::/48,10.244.0.0/16", maskSizeIPv4: 26, maskSizeIPv6: 60},
			want: "[fd00::/48 10.244.0.0/16] [60 26] []"},
		{name: "single stack IPv6, --node-cidr-mask-size",
			f:    flags{clusterCIDR: "fd00::/48", maskSize: 56},
			want: "[fd00::/48] [56] []"},
		{name: "single stack IPv4, --node-cidr-mask-size-ipv4",
			f:    flags{clusterCIDR: "10.0.0.0/8", maskSizeIPv4: 20},
			want: "[10.0.0.0/8] [20] []"},
		{name: "an unparsable service range is only warned about",
			f:    flags{clusterCIDR: "10.244.0.0/16", serviceRange: "nonsense"},
			want: "[10.244.0.0/16] [24] []"},
		{name: "cloud allocator", f: flags{allocatorType: cloudAllocatorType, clusterCIDR: "10.244.0.0/16"},
			wantErr: "--cidr-allocator-type is set to 'CloudAllocator' but cloud provider is not configured"},
		{name: "legacy IPAM from cluster", f: flags{allocatorType: ipamFromClusterAllocatorType, clusterCIDR: "10.244.0.0/16"},
			wantErr: "Error trying to Init(): legacy cloud provider support disabled at build time"},
		{name: "unknown allocator", f: flags{allocatorType: "Foo", clusterCIDR: "10.244.0.0/16"},
			wantErr: "invalid CIDR allocator type: Foo"},
		{name: "no cluster CIDR", f: flags{},
			wantErr: "invalid CIDR[0]: <nil> (invalid CIDR address: )"}, // k8s.io/utils/net.ParseCIDRs, as upstream
		{name: "two IPv4 cluster CIDRs", f: flags{clusterCIDR: "10.0.0.0/16,10.1.0.0/16"},
			wantErr: "len of ClusterCIDRs==2 and they are not configured as dual stack (at least one from each IPFamily"},
		{name: "three cluster CIDRs", f: flags{clusterCIDR: "10.0.0.0/16,fd00::/48,10.1.0.0/16"},
			wantErr: "length of clusterCIDRs is:3 more than max allowed of 2"},
		{name: "three service ranges", f: flags{clusterCIDR: "10.0.0.0/16", serviceRange: "10.96.0.0/12,fd00::/108,10.1.0.0/16"},
			wantErr: "--service-cluster-ip-range can not contain more than two entries"},
		{name: "two IPv4 service ranges", f: flags{clusterCIDR: "10.0.0.0/16", serviceRange: "10.96.0.0/12,10.112.0.0/12"},
			wantErr: "serviceCIDR and secondaryServiceCIDR are not dualstack (from different IPfamiles)"},
		{name: "--node-cidr-mask-size on dual stack", f: flags{clusterCIDR: "10.0.0.0/16,fd00::/48", maskSize: 24},
			wantErr: "usage of --node-cidr-mask-size is not allowed with dual-stack clusters"},
		{name: "--node-cidr-mask-size with a per-family one", f: flags{clusterCIDR: "10.0.0.0/16", maskSize: 24, maskSizeIPv4: 24},
			wantErr: "usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use IPFamily specific flags"},
		{name: "IPv4 mask on IPv6", f: flags{clusterCIDR: "fd00::/48", maskSizeIPv4: 24},
			wantErr: "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster"},
		{name: "IPv6 mask on IPv4", f: flags{clusterCIDR: "10.0.0.0/16", maskSizeIPv6: 64},
			wantErr: "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster"},
		{name: "both per-family masks on IPv4", f: flags{clusterCIDR: "10.0.0.0/16", maskSizeIPv4: 24, maskSizeIPv6: 64},
			wantErr: "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster"},
		{name: "node mask smaller than the cluster CIDR's", f: flags{clusterCIDR: "10.0.0.0/16", maskSize: 8},
			wantErr: "Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size configured for CIDR family"},
		{name: "default IPv6 mask smaller than a /80 cluster CIDR's", f: flags{clusterCIDR: "10.0.0.0/16,fd00::/80"},
			wantErr: "Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size configured for CIDR family"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.f.allocatorType == "" {
				tc.f.allocatorType = rangeAllocatorType
			}
			cfg, err := parseFlags(tc.f, logr.Discard())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(cfg.clusterCIDRs, " ", cfg.maskSizes, " ", cfg.serviceCIDRs); got != tc.want {
				t.Fatalf("config = %s, want %s", got, tc.want)
			}
		})
	}
}
