package pool

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		file    *string // nil: no --cloud-config
		want    Config
		errText string
	}{
		{name: "no file gives the defaults", want: Config{ConfigMap: "kcm-address-pools", LoadBalancerClass: "kcm.io/pool"}},
		{name: "an empty file gives the defaults", file: new(""), want: Config{ConfigMap: "kcm-address-pools", LoadBalancerClass: "kcm.io/pool"}},
		{
			name: "both keys",
			file: new("configMap: lb-pools\nloadBalancerClass: example.com/lb\n"),
			want: Config{ConfigMap: "lb-pools", LoadBalancerClass: "example.com/lb"},
		},
		{name: "an unknown key is an error", file: new("configmap: lb-pools\n"), errText: `unknown field "configmap"`},
		{name: "a bad ConfigMap name is an error", file: new("configMap: Lb_Pools\n"), errText: `configMap "Lb_Pools"`},
		{name: "a bad class is an error", file: new("loadBalancerClass: a/b/c\n"), errText: `loadBalancerClass "a/b/c"`},
		{name: "not YAML is an error", file: new("configMap: [\n"), errText: "--cloud-config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			var err error
			if tc.file == nil {
				cfg, err = ParseConfig(nil)
			} else {
				cfg, err = ParseConfig(strings.NewReader(*tc.file))
			}
			if tc.errText != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error = %v, want ErrConfig containing %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if cfg != tc.want {
				t.Errorf("config = %+v, want %+v", cfg, tc.want)
			}
		})
	}
}

func TestParsePools(t *testing.T) {
	pools, err := ParsePools("kube-system/p", `
- name: web
  addresses:
  - 192.0.2.16/30
  - 192.0.2.4 - 192.0.2.6
  - "2001:db8::/127"
  namespaces: [web, shop]
- name: shared
  addresses: [198.51.100.7]
`)
	if err != nil {
		t.Fatalf("ParsePools: %v", err)
	}
	want := []Pool{
		{Name: "web", Namespaces: []string{"web", "shop"}, Ranges: []Range{
			{First: netip.MustParseAddr("192.0.2.4"), Last: netip.MustParseAddr("192.0.2.6"), Entry: "192.0.2.4 - 192.0.2.6"},
			{First: netip.MustParseAddr("192.0.2.16"), Last: netip.MustParseAddr("192.0.2.19"), Entry: "192.0.2.16/30"},
			{First: netip.MustParseAddr("2001:db8::"), Last: netip.MustParseAddr("2001:db8::1"), Entry: "2001:db8::/127"},
		}},
		{Name: "shared", Ranges: []Range{
			{First: netip.MustParseAddr("198.51.100.7"), Last: netip.MustParseAddr("198.51.100.7"), Entry: "198.51.100.7"},
		}},
	}
	if !slices.EqualFunc(pools, want, func(a, b Pool) bool {
		return a.Name == b.Name && slices.Equal(a.Namespaces, b.Namespaces) && slices.Equal(a.Ranges, b.Ranges)
	}) {
		t.Errorf("pools = %+v\nwant %+v", pools, want)
	}
}

func TestParsePoolsErrors(t *testing.T) {
	cases := []struct {
		name, data, errText string
	}{
		{"not a list", "pools: {}", `ConfigMap kube-system/p, key "pools"`},
		{"an unknown key", "- {name: a, addresses: [10.0.0.1], namespace: [x]}", `unknown field "[0].namespace"`},
		{"a key twice", "- {name: a, addresses: [10.0.0.1]}\n- name: b\n  name: c\n  addresses: [10.0.0.2]", `key "pools"`},
		{"a pool without a name", "- {addresses: [10.0.0.1]}", "pool #1 has no name"},
		{"a name twice", "- {name: a, addresses: [10.0.0.1]}\n- {name: a, addresses: [10.0.0.2]}", `pool "a" is defined twice`},
		{"no addresses", "- {name: a}", `pool "a" has no addresses`},
		{"a bad namespace", "- {name: a, addresses: [10.0.0.1], namespaces: [Team_A]}", `pool "a": namespace "Team_A"`},
		{"not an address", "- {name: a, addresses: [10.0.0.300]}", `pool "a": address "10.0.0.300": not an IP address, CIDR or first-last range`},
		{"a bad CIDR", "- {name: a, addresses: [10.0.0.0/33]}", `pool "a": address "10.0.0.0/33": not a valid CIDR`},
		{"a CIDR with host bits", "- {name: a, addresses: [10.0.0.5/30]}", `address "10.0.0.5/30": not a network address: the CIDR is 10.0.0.4/30`},
		{"a range of non-addresses", "- {name: a, addresses: [10.0.0.1-x]}", `address "10.0.0.1-x": not a range of two IP addresses`},
		{"a reversed range", "- {name: a, addresses: [10.0.0.9-10.0.0.1]}", `address "10.0.0.9-10.0.0.1": the range's last address is below its first`},
		{"a mixed range", `- {name: a, addresses: ["10.0.0.1-2001:db8::1"]}`, "the range mixes IPv4 and IPv6"},
		{"a zone", `- {name: a, addresses: ["fe80::1%eth0"]}`, "an IPv6 zone is not allowed"},
		{"a mapped address", `- {name: a, addresses: ["::ffff:10.0.0.1"]}`, "an IPv4-mapped IPv6 address is not allowed"},
		{"overlapping pools", "- {name: a, addresses: [10.0.0.0/29]}\n- {name: b, addresses: [10.0.0.7-10.0.0.9]}",
			`pool "a"'s "10.0.0.0/29" overlaps pool "b"'s "10.0.0.7-10.0.0.9"`},
		{"overlapping ranges of one pool", `- {name: a, addresses: ["2001:db8::/120", "2001:db8::ff"]}`,
			`pool "a"'s "2001:db8::/120" overlaps pool "a"'s "2001:db8::ff"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePools("kube-system/p", tc.data)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.errText) || !strings.Contains(err.Error(), "kube-system/p") {
				t.Fatalf("error = %v, want ErrConfig naming kube-system/p and containing %q", err, tc.errText)
			}
		})
	}
	// Adjacent ranges and the same range in both families are not overlaps.
	if _, err := ParsePools("kube-system/p", `
- {name: a, addresses: [10.0.0.0/30, "::a00:0/126"]}
- {name: b, addresses: [10.0.0.4-10.0.0.5]}
`); err != nil {
		t.Errorf("adjacent ranges: %v", err)
	}
}
