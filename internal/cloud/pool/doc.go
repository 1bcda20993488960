// Package pool is kcm's built-in cloud provider, "pool" (--cloud-provider=pool), for clusters
// without a cloud: it gives LoadBalancer Services addresses from pools an operator lists in a
// ConfigMap, and does nothing else (no instances, zones, clusters or routes).
//
// The pools are in ConfigMap kube-system/kcm-address-pools, key "pools":
//
//	data:
//	  pools: |
//	    - name: shared                # required, unique
//	      addresses:                  # CIDRs, first-last ranges or single addresses;
//	      - 192.0.2.0/28              # IPv4 and IPv6 mixed; every address of a CIDR is used
//	      - 192.0.2.100-192.0.2.120
//	      - 2001:db8::/120
//	    - name: team-a
//	      addresses: [198.51.100.10-198.51.100.19]
//	      namespaces: [team-a]        # absent or empty: every namespace
//
// --cloud-config, optional, is YAML with two optional keys: configMap (another ConfigMap name
// in kube-system) and loadBalancerClass (the class served besides class-less Services,
// "kcm.io/pool" by default). Unknown keys, overlapping pools and malformed entries are errors
// that name the entry.
//
// The files read in order: config.go parses and validates; allocate.go is the pure decision
// (which addresses one Service gets); provider.go is the cloudprovider.Interface, which reads
// the ConfigMap at each allocation, keeps the holdings in memory under one mutex, and rebuilds
// them at first use from the Services' status — the only state that survives a restart.
package pool
