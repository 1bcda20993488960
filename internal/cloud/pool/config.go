package pool

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	// DefaultConfigMap is the ConfigMap in kube-system that holds the pools unless --cloud-config
	// names another.
	DefaultConfigMap = "kcm-address-pools"
	// ConfigMapNamespace is where the pools' ConfigMap lives: kube-system, where kcm's identity
	// may read ConfigMaps and where only cluster administrators write.
	ConfigMapNamespace = "kube-system"
	// PoolsKey is the ConfigMap's data key holding the pools.
	PoolsKey = "pools"
	// DefaultLoadBalancerClass is the spec.loadBalancerClass the provider serves, besides
	// Services without a class, unless --cloud-config names another.
	DefaultLoadBalancerClass = "kcm.io/pool"
)

// ErrConfig marks a pool configuration kcm cannot use (the --cloud-config file, or the
// ConfigMap missing or malformed): an operator has to fix it, and the text says where.
var ErrConfig = errors.New("invalid address pool configuration")

// Config is the --cloud-config file: where the pools are, and which class the provider serves.
// Both keys are optional; an unknown key is an error, so a typo is not silently a default.
type Config struct {
	// ConfigMap is the name of the ConfigMap in kube-system holding the pools.
	ConfigMap string `json:"configMap,omitempty"`
	// LoadBalancerClass is the spec.loadBalancerClass served besides class-less Services.
	LoadBalancerClass string `json:"loadBalancerClass,omitempty"`
}

// ParseConfig reads --cloud-config; a nil reader (no --cloud-config) gives the defaults.
func ParseConfig(r io.Reader) (Config, error) {
	cfg := Config{}
	if r != nil {
		data, err := io.ReadAll(r)
		if err != nil {
			return Config{}, fmt.Errorf("reading the pool provider's --cloud-config: %w", err)
		}
		if err := strictYAML(data, &cfg); err != nil {
			return Config{}, fmt.Errorf("%w: --cloud-config: %w", ErrConfig, err)
		}
	}
	if cfg.ConfigMap == "" {
		cfg.ConfigMap = DefaultConfigMap
	}
	if cfg.LoadBalancerClass == "" {
		cfg.LoadBalancerClass = DefaultLoadBalancerClass
	}
	if errs := validation.IsDNS1123Subdomain(cfg.ConfigMap); len(errs) > 0 {
		return Config{}, fmt.Errorf("%w: --cloud-config: configMap %q (a ConfigMap name in %s): %s",
			ErrConfig, cfg.ConfigMap, ConfigMapNamespace, strings.Join(errs, "; "))
	}
	// The API server validates spec.loadBalancerClass as a qualified name; a class no Service
	// could carry would be a configuration that silently serves nothing.
	if errs := validation.IsQualifiedName(cfg.LoadBalancerClass); len(errs) > 0 {
		return Config{}, fmt.Errorf("%w: --cloud-config: loadBalancerClass %q: %s",
			ErrConfig, cfg.LoadBalancerClass, strings.Join(errs, "; "))
	}
	return cfg, nil
}

// Pool is one named set of addresses, for some namespaces or for all.
type Pool struct {
	Name string
	// Ranges are the pool's addresses, sorted by their first address.
	Ranges []Range
	// Namespaces the pool serves; empty: every namespace (a global pool).
	Namespaces []string
}

// Range is an inclusive span of addresses of one family, as written in the ConfigMap (Entry).
type Range struct {
	First, Last netip.Addr
	Entry       string
}

func (r Range) contains(a netip.Addr) bool {
	return a.BitLen() == r.First.BitLen() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

// serves says whether the pool is for the namespace: its own, or a global pool.
func (p Pool) serves(namespace string) bool {
	return len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, namespace)
}

func (p Pool) contains(a netip.Addr) bool {
	return slices.ContainsFunc(p.Ranges, func(r Range) bool { return r.contains(a) })
}

// hasFamily says whether the pool has any address of the family.
func (p Pool) hasFamily(f v1.IPFamily) bool {
	return slices.ContainsFunc(p.Ranges, func(r Range) bool { return familyOf(r.First) == f })
}

// poolSpec is one entry of the ConfigMap's "pools" list as written.
type poolSpec struct {
	Name       string   `json:"name"`
	Addresses  []string `json:"addresses"`
	Namespaces []string `json:"namespaces,omitempty"`
}

// ParsePools reads the ConfigMap's "pools" value. source names the ConfigMap in errors, which
// reach the Service as its Event text, so each names the pool and the entry at fault.
func ParsePools(source, data string) ([]Pool, error) {
	var specs []poolSpec
	if err := strictYAML([]byte(data), &specs); err != nil {
		return nil, fmt.Errorf("%w: ConfigMap %s, key %q: %w", ErrConfig, source, PoolsKey, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: ConfigMap %s: %s", ErrConfig, source, fmt.Sprintf(format, args...))
	}
	pools := make([]Pool, 0, len(specs))
	names := map[string]bool{}
	for i, s := range specs {
		if s.Name == "" {
			return nil, bad("pool #%d has no name", i+1)
		}
		if names[s.Name] {
			return nil, bad("pool %q is defined twice", s.Name)
		}
		names[s.Name] = true
		if len(s.Addresses) == 0 {
			return nil, bad("pool %q has no addresses", s.Name)
		}
		for _, ns := range s.Namespaces {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, bad("pool %q: namespace %q: %s", s.Name, ns, strings.Join(errs, "; "))
			}
		}
		p := Pool{Name: s.Name, Namespaces: s.Namespaces}
		for _, entry := range s.Addresses {
			r, err := parseRange(entry)
			if err != nil {
				return nil, bad("pool %q: address %q: %v", s.Name, entry, err)
			}
			p.Ranges = append(p.Ranges, r)
		}
		slices.SortFunc(p.Ranges, func(a, b Range) int { return a.First.Compare(b.First) })
		pools = append(pools, p)
	}
	// An address in two pools would belong to two sets of namespaces at once, and which pool
	// "owns" it would depend on the order they are tried: refuse, naming both entries.
	for i, p := range pools {
		for j, r := range p.Ranges {
			for _, q := range pools[i:] {
				for k, o := range q.Ranges {
					if q.Name == p.Name && k <= j {
						continue
					}
					if r.contains(o.First) || o.contains(r.First) {
						return nil, bad("pool %q's %q overlaps pool %q's %q", p.Name, r.Entry, q.Name, o.Entry)
					}
				}
			}
		}
	}
	return pools, nil
}

// parseRange reads a CIDR ("192.0.2.0/28", "2001:db8::/120"), a first-last range
// ("192.0.2.10-192.0.2.20") or a single address. A CIDR's every address is usable, network and
// broadcast addresses included: a load-balancer address is announced on its own, not as a subnet.
func parseRange(entry string) (Range, error) {
	s := strings.TrimSpace(entry)
	var r Range
	switch {
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, errors.New("not a valid CIDR")
		}
		if p.Masked() != p {
			return r, fmt.Errorf("not a network address: the CIDR is %s", p.Masked())
		}
		r.First = p.Addr()
		r.Last = lastOf(p)
	case strings.Contains(s, "-"):
		first, last, _ := strings.Cut(s, "-")
		var err1, err2 error
		r.First, err1 = netip.ParseAddr(strings.TrimSpace(first))
		r.Last, err2 = netip.ParseAddr(strings.TrimSpace(last))
		if err1 != nil || err2 != nil {
			return r, errors.New("not a range of two IP addresses (first-last)")
		}
		if r.First.BitLen() != r.Last.BitLen() {
			return r, errors.New("the range mixes IPv4 and IPv6")
		}
		if r.Last.Less(r.First) {
			return r, errors.New("the range's last address is below its first")
		}
	default:
		a, err := netip.ParseAddr(s)
		if err != nil {
			return r, errors.New("not an IP address, CIDR or first-last range")
		}
		r.First, r.Last = a, a
	}
	// A zone (fe80::1%eth0) or an IPv4-mapped IPv6 address could never equal the address a
	// Service's status holds, so the pool would silently hold nothing usable.
	if r.First.Zone() != "" || r.Last.Zone() != "" {
		return r, errors.New("an IPv6 zone is not allowed")
	}
	if r.First.Is4In6() || r.Last.Is4In6() {
		return r, errors.New("an IPv4-mapped IPv6 address is not allowed: write the IPv4 address")
	}
	r.Entry = entry
	return r, nil
}

// strictYAML decodes YAML refusing unknown and duplicate keys, matched case-sensitively:
// yaml.UnmarshalStrict matches keys as encoding/json does, ignoring case, so "configmap"
// would pass; here a key written otherwise than documented is an error, not a default.
func strictYAML(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// lastOf is a prefix's last address: its address with every host bit set.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
