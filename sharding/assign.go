package sharding

import (
	"slices"
)

// Assign is the balanced assignment of n ranges to members, the same on every replica that sees the same
// members and holders: each member gets n/len(members) ranges, the first n%len(members) members (in sorted
// order) one more. A range stays with its current holder while that holder is a member under its share, so
// that a change of membership moves as few ranges as it can; the rest go, in order, to the members under
// their share. holders[i] is the current holder of range i ("" when free or expired). The result names the
// owner of every range ("" for all when there are no members).
func Assign(n int, members []string, holders []string) []string {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	out := make([]string, n)
	if len(ms) == 0 {
		return out
	}
	quota := make(map[string]int, len(ms))
	for i, m := range ms {
		quota[m] = n / len(ms)
		if i < n%len(ms) {
			quota[m]++
		}
	}
	count := make(map[string]int, len(ms))
	for i := 0; i < n && i < len(holders); i++ {
		h := holders[i]
		if q, ok := quota[h]; ok && count[h] < q {
			out[i] = h
			count[h]++
		}
	}
	next := 0
	for i := range out {
		if out[i] != "" {
			continue
		}
		for count[ms[next]] >= quota[ms[next]] {
			next++
		}
		out[i] = ms[next]
		count[ms[next]]++
	}
	return out
}
