package job

import (
	"sort"
	"strconv"
	"strings"
)

// interval is a closed range of completion indexes.
type interval struct{ first, last int }

// intervals is a set of completion indexes as sorted, disjoint, non-adjacent ranges: the
// form of status.completedIndexes and status.failedIndexes ("1,3-5,7").
type intervals []interval

// parseIntervals reads the compressed form, keeping only indexes below completions. A
// malformed range is skipped, as upstream does: the status may have been written by anyone.
func parseIntervals(s string, completions int) intervals {
	if s == "" {
		return nil
	}
	var raw intervals
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				continue
			}
		}
		if first >= completions {
			continue
		}
		raw = append(raw, interval{first, min(last, completions-1)})
	}
	return normalize(raw)
}

// normalize sorts ranges and merges overlapping or adjacent ones.
func normalize(in intervals) intervals {
	if len(in) == 0 {
		return nil
	}
	sorted := append(intervals(nil), in...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].first < sorted[j].first })
	out := intervals{sorted[0]}
	for _, iv := range sorted[1:] {
		last := &out[len(out)-1]
		if iv.first <= last.last+1 {
			last.last = max(last.last, iv.last)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// with returns the union of s and the given indexes.
func (s intervals) with(indexes ...int) intervals {
	if len(indexes) == 0 {
		return s
	}
	all := append(intervals(nil), s...)
	for _, ix := range indexes {
		all = append(all, interval{ix, ix})
	}
	return normalize(all)
}

// union returns the indexes in s or o.
func (s intervals) union(o intervals) intervals {
	if len(o) == 0 {
		return s
	}
	return normalize(append(append(intervals(nil), s...), o...))
}

// total is the number of indexes.
func (s intervals) total() int {
	n := 0
	for _, iv := range s {
		n += iv.last - iv.first + 1
	}
	return n
}

// has reports whether ix is in the set.
func (s intervals) has(ix int) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].last >= ix })
	return i < len(s) && s[i].first <= ix
}

// String is the compressed form: a range of two is written as two single indexes ("1,2"),
// longer ones with a dash ("3-5"), as upstream writes it.
func (s intervals) String() string {
	var b strings.Builder
	for _, iv := range s {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(iv.first))
		switch {
		case iv.last == iv.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(iv.last))
		case iv.last > iv.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(iv.last))
		}
	}
	return b.String()
}

// overlap counts the indexes in both s and o.
func (s intervals) overlap(o intervals) int {
	n, i, j := 0, 0, 0
	for i < len(s) && j < len(o) {
		if d := min(s[i].last, o[j].last) - max(s[i].first, o[j].first) + 1; d > 0 {
			n += d
		}
		if s[i].last < o[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}
