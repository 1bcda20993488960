package nodeipam

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// op is one event the allocator sees: a node (name/uid) allocated, occupying CIDRs, or
// released; want is the CIDRs allocated, or a substring of the error.
type op struct {
	kind      string // allocate, occupy, release
	name, uid string
	cidrs     []string // occupy
	want      string
}

func TestAllocator(t *testing.T) {
	dual := flags{allocatorType: rangeAllocatorType, clusterCIDR: "10.0.0.0/29,fd00::/64", maskSizeIPv4: 30, maskSizeIPv6: 65}
	cases := []struct {
		name string
		f    flags
		ops  []op
	}{
		{"one CIDR per family, distinct", dual, []op{
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30 fd00::/65]"},
			{kind: "allocate", name: "b", uid: "2", want: "[10.0.0.4/30 fd00::8000:0:0:0/65]"},
			{kind: "allocate", name: "c", uid: "3", want: "no remaining CIDRs"},
		}},
		{"a node's CIDRs come back when it goes", dual, []op{
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30 fd00::/65]"},
			{kind: "allocate", name: "b", uid: "2", want: "[10.0.0.4/30 fd00::8000:0:0:0/65]"},
			{kind: "release", name: "a"},
			{kind: "allocate", name: "c", uid: "3", want: "[10.0.0.0/30 fd00::/65]"},
		}},
		{"a node allocated again before the cache shows its CIDRs gets the same ones", dual, []op{
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30 fd00::/65]"},
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30 fd00::/65]"},
			{kind: "allocate", name: "b", uid: "2", want: "[10.0.0.4/30 fd00::8000:0:0:0/65]"},
		}},
		{"a node created again under its name gives its old CIDRs back", dual, []op{
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30 fd00::/65]"},
			{kind: "allocate", name: "a", uid: "2", want: "[10.0.0.4/30 fd00::8000:0:0:0/65]"},
			{kind: "allocate", name: "b", uid: "3", want: "[10.0.0.0/30 fd00::/65]"},
		}},
		{"CIDRs nodes already have are not handed out", dual, []op{
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"10.0.0.0/30", "fd00::/65"}},
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.4/30 fd00::8000:0:0:0/65]"},
			{kind: "allocate", name: "b", uid: "2", want: "no remaining CIDRs"},
		}},
		{"exhaustion of the second family keeps nothing of the first", flags{allocatorType: rangeAllocatorType,
			clusterCIDR: "10.0.0.0/29,fd00::/64", maskSizeIPv4: 30, maskSizeIPv6: 65}, []op{
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"10.0.0.0/30", "fd00::/64"}},
			{kind: "allocate", name: "a", uid: "1", want: "no remaining CIDRs"},
			{kind: "release", name: "x"},
			{kind: "allocate", name: "b", uid: "2", want: "[10.0.0.0/30 fd00::/65]"},
			// 10.0.0.4/30, taken for a and given back when IPv6 ran out, is free.
			{kind: "allocate", name: "c", uid: "3", want: "[10.0.0.4/30 fd00::8000:0:0:0/65]"},
		}},
		{"a node given other CIDRs gives back the ones it held", dual, []op{
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"10.0.0.0/30"}},
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"10.0.0.4/30"}},
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30 fd00::/65]"},
		}},
		{"the service range is kept out", flags{allocatorType: rangeAllocatorType, clusterCIDR: "10.0.0.0/28",
			maskSize: 30, serviceRange: "10.0.0.0/29"}, []op{
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.8/30]"},
		}},
		{"CIDRs outside the cluster CIDR, unparsable, or of a family not configured", flags{allocatorType: rangeAllocatorType,
			clusterCIDR: "10.0.0.0/28", maskSize: 30}, []op{
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"10.1.0.0/30"},
				want: "failed to mark cidr[10.1.0.0/30] at idx [0] as occupied for node: x: cidr 10.1.0.0/30 is out the range of cluster cidr 10.0.0.0/28"},
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"bogus"}, want: "failed to parse node x, CIDR bogus"},
			{kind: "occupy", name: "x", uid: "9", cidrs: []string{"10.0.0.0/30", "fd00::/64"},
				want: "node:x has an allocated cidr: fd00::/64 at index:1 that does not exist in cluster cidrs configuration"},
			// None of them was marked.
			{kind: "allocate", name: "a", uid: "1", want: "[10.0.0.0/30]"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseFlags(tc.f, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			a, err := newAllocator(cfg, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range tc.ops {
				var got string
				switch o.kind {
				case "allocate":
					cidrs, _, err := a.allocate(o.name, types.UID(o.uid))
					got = fmt.Sprint(cidrs)
					if err != nil {
						got = err.Error()
					}
				case "occupy":
					if err := a.occupy(o.name, types.UID(o.uid), o.cidrs); err != nil {
						got = err.Error()
					}
				case "release":
					a.release(o.name)
				}
				if !strings.Contains(got, o.want) || (o.want == "" && got != "") {
					t.Fatalf("op %d %s %s: %q, want %q", i, o.kind, o.name, got, o.want)
				}
			}
		})
	}
}
