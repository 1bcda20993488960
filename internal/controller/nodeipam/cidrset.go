package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"net"
)

// maxIPv6SubnetBits is upstream's limit on an IPv6 cluster CIDR's split: at most 2^16 node
// CIDRs, so that the bitmap of a /48 cut into /112s cannot exhaust memory.
const maxIPv6SubnetBits = 16

// Upstream's errors, with their messages: the Event and the log name them.
var (
	errNoCIDRsRemaining = errors.New("CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range")
	errSubNetTooBig     = errors.New("New CIDR set failed; the node CIDR size is too big")
)

// cidrSet hands out the node CIDRs of one cluster CIDR: the cluster CIDR cut into blocks of
// the node mask size, numbered from its start, one bit each. It is not safe for concurrent
// use; the Reconciler guards it.
type cidrSet struct {
	cluster *net.IPNet
	// hostBits is how many address bits a node CIDR leaves to its hosts (32 or 128 minus the
	// node mask size): block i starts at the cluster's base plus i<<hostBits.
	hostBits int
	nodeMask net.IPMask
	max      int
	used     int
	// next is where the search for a free block starts: one past the last block handed out,
	// as upstream, so that a CIDR just released is not handed out again at once.
	next int
	// words is the bitmap, grown as blocks are used (an IPv4 /8 cut into /32s would be
	// 2 MiB up front).
	words []uint64
	// label is the cluster CIDR as upstream's cidrset metrics name it.
	label string
}

// newCIDRSet cuts cluster into node CIDRs of nodeMaskSize bits.
func newCIDRSet(cluster *net.IPNet, nodeMaskSize int) (*cidrSet, error) {
	ones, addrBits := cluster.Mask.Size()
	if nodeMaskSize < ones || nodeMaskSize > addrBits {
		return nil, fmt.Errorf("node CIDR mask size %d does not fit cluster CIDR %v", nodeMaskSize, cluster)
	}
	if cluster.IP.To4() == nil && nodeMaskSize-ones > maxIPv6SubnetBits {
		return nil, errSubNetTooBig
	}
	registerMetrics()
	s := &cidrSet{
		cluster:  &net.IPNet{IP: cluster.IP.Mask(cluster.Mask), Mask: cluster.Mask},
		hostBits: addrBits - nodeMaskSize,
		nodeMask: net.CIDRMask(nodeMaskSize, addrBits),
		max:      1 << (nodeMaskSize - ones),
		label:    cluster.String(),
	}
	cidrSetMaxCIDRs.WithLabelValues(s.label).Set(float64(s.max))
	return s, nil
}

// allocateNext hands out the first free block at or after next, wrapping around.
func (s *cidrSet) allocateNext() (*net.IPNet, error) {
	if s.used == s.max {
		return nil, errNoCIDRsRemaining
	}
	i := s.findFree(s.next, s.max)
	if i < 0 {
		i = s.findFree(0, s.next)
	}
	s.set(i, true)
	// Upstream's tries: the used blocks passed over from where the search started.
	tries := (i - s.next + s.max) % s.max
	s.next = (i + 1) % s.max
	cidrSetAllocations.WithLabelValues(s.label).Inc()
	cidrSetTriesPerRequest.WithLabelValues(s.label).Observe(float64(tries))
	s.recordUsage()
	return s.block(i), nil
}

// occupy marks as used every block cidr overlaps (all of them when cidr holds the whole
// cluster CIDR, as a service range may).
func (s *cidrSet) occupy(cidr *net.IPNet) error {
	first, last, err := s.span(cidr)
	if err != nil {
		return err
	}
	for i := first; i <= last; i++ {
		// Counted per block newly used, as upstream, so a block occupied twice counts once.
		if s.set(i, true) {
			cidrSetAllocations.WithLabelValues(s.label).Inc()
		}
	}
	s.recordUsage()
	return nil
}

// release frees every block cidr overlaps.
func (s *cidrSet) release(cidr *net.IPNet) error {
	first, last, err := s.span(cidr)
	if err != nil {
		return err
	}
	for i := first; i <= last; i++ {
		if s.set(i, false) {
			cidrSetReleases.WithLabelValues(s.label).Inc()
		}
	}
	s.recordUsage()
	return nil
}

// span is the range of block indexes cidr overlaps.
func (s *cidrSet) span(cidr *net.IPNet) (first, last int, err error) {
	if cidr == nil {
		return 0, 0, fmt.Errorf("error getting indices for cluster cidr %v, cidr is nil", s.cluster)
	}
	if (cidr.IP.To4() == nil) != (s.cluster.IP.To4() == nil) ||
		!s.cluster.Contains(cidr.IP) && !cidr.Contains(s.cluster.IP) {
		return 0, 0, fmt.Errorf("cidr %v is out the range of cluster cidr %v", cidr, s.cluster)
	}
	clusterOnes, _ := s.cluster.Mask.Size()
	ones, _ := cidr.Mask.Size()
	if ones <= clusterOnes {
		return 0, s.max - 1, nil
	}
	start := cidr.IP.Mask(cidr.Mask)
	end := make(net.IP, len(start))
	for i := range start {
		end[i] = start[i] | ^cidr.Mask[i]
	}
	return s.index(start), s.index(end), nil
}

// index is the block holding ip, an address inside the cluster CIDR.
func (s *cidrSet) index(ip net.IP) int {
	off := new(big.Int).Sub(ipInt(ip), ipInt(s.cluster.IP))
	return int(off.Rsh(off, uint(s.hostBits)).Int64())
}

// block is node CIDR i.
func (s *cidrSet) block(i int) *net.IPNet {
	n := new(big.Int).Lsh(big.NewInt(int64(i)), uint(s.hostBits))
	n.Add(n, ipInt(s.cluster.IP))
	ip := make(net.IP, len(s.cluster.IP))
	n.FillBytes(ip)
	return &net.IPNet{IP: ip, Mask: s.nodeMask}
}

// ipInt is ip as a number, in its family's length (4 or 16 bytes).
func ipInt(ip net.IP) *big.Int {
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return new(big.Int).SetBytes(ip)
}

func (s *cidrSet) isSet(i int) bool {
	w := i / 64
	return w < len(s.words) && s.words[w]&(1<<(i%64)) != 0
}

// set marks block i used or free, keeping the count of used blocks; it reports whether the
// block changed.
func (s *cidrSet) set(i int, used bool) bool {
	if s.isSet(i) == used {
		return false
	}
	w := i / 64
	for len(s.words) <= w {
		s.words = append(s.words, 0)
	}
	s.words[w] ^= 1 << (i % 64)
	if used {
		s.used++
	} else {
		s.used--
	}
	return true
}

// findFree is the first free block in [from, to), or -1; whole used words are skipped.
func (s *cidrSet) findFree(from, to int) int {
	for i := from; i < to; {
		w := i / 64
		if w >= len(s.words) {
			return i
		}
		free := ^s.words[w] >> (i % 64)
		if free == 0 {
			i = (w + 1) * 64
			continue
		}
		i += bits.TrailingZeros64(free)
		if i < to {
			return i
		}
		return -1
	}
	return -1
}
