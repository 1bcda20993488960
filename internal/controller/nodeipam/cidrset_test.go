package nodeipam

import (
	"errors"
	"net"
	"testing"

	netutils "k8s.io/utils/net"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, c, err := netutils.ParseCIDRSloppy(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// step is one operation on a cidrSet and what it must answer: allocate wants the CIDR
// handed out in cidr, or err; occupy and release take cidr and fail only when err is set.
type step struct {
	op   string // allocate, occupy, release
	cidr string // occupy/release: the argument; allocate: the CIDR expected
	err  error  // allocate: errNoCIDRsRemaining; occupy/release: any error when errOut
}

var errOut = errors.New("any error")

func TestCIDRSet(t *testing.T) {
	cases := []struct {
		name    string
		cluster string
		mask    int
		steps   []step
	}{
		{"IPv4 blocks in order", "10.244.0.0/16", 24, []step{
			{op: "allocate", cidr: "10.244.0.0/24"},
			{op: "allocate", cidr: "10.244.1.0/24"},
			{op: "allocate", cidr: "10.244.2.0/24"},
		}},
		{"occupied blocks are skipped", "10.244.0.0/16", 24, []step{
			{op: "occupy", cidr: "10.244.0.0/24"},
			{op: "occupy", cidr: "10.244.1.0/24"},
			{op: "allocate", cidr: "10.244.2.0/24"},
		}},
		{"a released block is not handed out again before the others (rotation)", "10.0.0.0/28", 30, []step{
			{op: "allocate", cidr: "10.0.0.0/30"},
			{op: "allocate", cidr: "10.0.0.4/30"},
			{op: "release", cidr: "10.0.0.0/30"},
			{op: "allocate", cidr: "10.0.0.8/30"},
			{op: "allocate", cidr: "10.0.0.12/30"},
			{op: "allocate", cidr: "10.0.0.0/30"},
			{op: "allocate", err: errNoCIDRsRemaining},
		}},
		{"exhaustion, then a release makes room", "10.0.0.0/30", 31, []step{
			{op: "allocate", cidr: "10.0.0.0/31"},
			{op: "allocate", cidr: "10.0.0.2/31"},
			{op: "allocate", err: errNoCIDRsRemaining},
			{op: "release", cidr: "10.0.0.2/31"},
			{op: "allocate", cidr: "10.0.0.2/31"},
		}},
		{"a range larger than a block (a service range) occupies every block it covers", "10.0.0.0/24", 26, []step{
			{op: "occupy", cidr: "10.0.0.128/25"},
			{op: "allocate", cidr: "10.0.0.0/26"},
			{op: "allocate", cidr: "10.0.0.64/26"},
			{op: "allocate", err: errNoCIDRsRemaining},
		}},
		{"a range smaller than a block occupies its block", "10.0.0.0/24", 26, []step{
			{op: "occupy", cidr: "10.0.0.5/32"},
			{op: "allocate", cidr: "10.0.0.64/26"},
		}},
		{"a range holding the cluster CIDR occupies it all", "10.96.0.0/16", 24, []step{
			{op: "occupy", cidr: "10.96.0.0/12"},
			{op: "allocate", err: errNoCIDRsRemaining},
		}},
		{"outside the cluster CIDR", "10.244.0.0/16", 24, []step{
			{op: "occupy", cidr: "10.245.0.0/24", err: errOut},
			{op: "occupy", cidr: "fd00::/64", err: errOut},
			{op: "release", cidr: "192.168.0.0/24", err: errOut},
		}},
		{"IPv6 /48 into /64s", "fd00::/48", 64, []step{
			{op: "allocate", cidr: "fd00::/64"},
			{op: "allocate", cidr: "fd00:0:0:1::/64"},
			{op: "occupy", cidr: "fd00:0:0:2::/64"},
			{op: "allocate", cidr: "fd00:0:0:3::/64"},
		}},
		{"IPv6 past the high half of the address", "fd00:1:2:3::/96", 112, []step{
			{op: "allocate", cidr: "fd00:1:2:3::/112"},
			{op: "allocate", cidr: "fd00:1:2:3::1:0/112"},
		}},
		{"IPv6 blocks straddling the two 64-bit halves", "fd00::/56", 72, []step{
			{op: "occupy", cidr: "fd00:0:0:ff::/64"},
			{op: "allocate", cidr: "fd00::/72"},
			{op: "release", cidr: "fd00::/72"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newCIDRSet(mustCIDR(t, tc.cluster), tc.mask)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.steps {
				switch st.op {
				case "allocate":
					got, err := s.allocateNext()
					if st.err != nil {
						if !errors.Is(err, st.err) {
							t.Fatalf("step %d: allocate = %v, %v; want %v", i, got, err, st.err)
						}
						continue
					}
					if err != nil || got.String() != st.cidr {
						t.Fatalf("step %d: allocate = %v, %v; want %s", i, got, err, st.cidr)
					}
				case "occupy", "release":
					f := s.occupy
					if st.op == "release" {
						f = s.release
					}
					err := f(mustCIDR(t, st.cidr))
					if (err != nil) != (st.err != nil) {
						t.Fatalf("step %d: %s(%s) = %v; want error %v", i, st.op, st.cidr, err, st.err != nil)
					}
				}
			}
		})
	}
}

// Every block of a large IPv6 range is handed out once: 2^16 /64s of a /48, the largest split
// upstream allows, then exhaustion.
func TestCIDRSetIPv6LargeRangeHandsOutEveryBlockOnce(t *testing.T) {
	s, err := newCIDRSet(mustCIDR(t, "fd00::/48"), 64)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 1 << 16 {
		c, err := s.allocateNext()
		if err != nil {
			t.Fatalf("after %d: %v", len(seen), err)
		}
		if seen[c.String()] || !mustCIDR(t, "fd00::/48").Contains(c.IP) {
			t.Fatalf("%v handed out twice or outside the range", c)
		}
		seen[c.String()] = true
	}
	if _, err := s.allocateNext(); !errors.Is(err, errNoCIDRsRemaining) {
		t.Fatalf("allocate after exhaustion = %v", err)
	}
	if c := s.block(1<<16 - 1).String(); c != "fd00:0:0:ffff::/64" {
		t.Fatalf("last block = %s", c)
	}
	// A block index whose bits straddle the two 64-bit halves of the address.
	s, err = newCIDRSet(mustCIDR(t, "fd00::/56"), 72)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.block(257); c.String() != "fd00:0:0:1:100::/72" || s.index(c.IP) != 257 {
		t.Fatalf("block 257 = %s (index %d)", c, s.index(c.IP))
	}
}

func TestNewCIDRSet(t *testing.T) {
	cases := []struct {
		cluster string
		mask    int
		wantErr error
	}{
		{"fd00::/48", 64, nil},
		{"fd00::/48", 65, errSubNetTooBig},
		{"10.0.0.0/8", 32, nil}, // IPv4 has no limit, as upstream
		{"10.0.0.0/16", 8, errOut},
		{"10.0.0.0/16", 33, errOut},
	}
	for _, tc := range cases {
		_, err := newCIDRSet(mustCIDR(t, tc.cluster), tc.mask)
		switch {
		case tc.wantErr == nil && err != nil, tc.wantErr != nil && err == nil:
			t.Errorf("%s /%d: %v, want %v", tc.cluster, tc.mask, err, tc.wantErr)
		case tc.wantErr == errSubNetTooBig && !errors.Is(err, errSubNetTooBig):
			t.Errorf("%s /%d: %v, want %v", tc.cluster, tc.mask, err, tc.wantErr)
		}
	}
}
