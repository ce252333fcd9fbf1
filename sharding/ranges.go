package sharding

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Field is the field the API server hashes for a shard selector: the object's UID.
const Field = "object.metadata.uid"

// DefaultRanges is how many ranges the hash space is cut into when Options.Ranges is 0.
const DefaultRanges = 16

// MaxRanges bounds Options.Ranges: one Lease per range.
const MaxRanges = 1024

// Hash is the 64-bit FNV-1a hash of a UID, the function of the API server's shardRange().
func Hash(uid types.UID) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return h.Sum64()
}

// Space is the hash space cut into n equal ranges (n a power of two).
type Space struct {
	n     int
	shift uint // 64 - log2(n)
}

// NewSpace cuts the hash space into n ranges; n must be a power of two from 1 to MaxRanges.
func NewSpace(n int) (Space, error) {
	if n < 1 || n > MaxRanges || n&(n-1) != 0 {
		return Space{}, fmt.Errorf("shard ranges: expected a power of two from 1 to %d, got %d", MaxRanges, n)
	}
	return Space{n: n, shift: uint(64 - bits.TrailingZeros(uint(n)))}, nil
}

// Len is the number of ranges.
func (s Space) Len() int { return s.n }

// Of is the range a UID falls in.
func (s Space) Of(uid types.UID) int {
	if s.n <= 1 {
		return 0
	}
	return int(Hash(uid) >> s.shift)
}

// Start is the inclusive lower bound of range i.
func (s Space) Start(i int) uint64 {
	if s.n <= 1 {
		return 0
	}
	return uint64(i) << s.shift
}

// hexEnd is the exclusive upper bound of range i as the API server writes it: "0x" and 16 lowercase hex
// digits, or 2^64 for the last range.
func (s Space) hexEnd(i int) string {
	if i >= s.n-1 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", s.Start(i+1))
}

// Bounds names range i as "0x…-0x…" (Lease annotations, logs).
func (s Space) Bounds(i int) string {
	return fmt.Sprintf("0x%016x-%s", s.Start(i), s.hexEnd(i))
}

// Selector is the shard selector of the given ranges (ListOptions.shardSelector): adjacent ranges are
// joined into one shardRange(). It is "" for no ranges (no selector can match nothing) and for the whole
// space (no selector needed).
func (s Space) Selector(ranges []int) string {
	rs := append([]int(nil), ranges...)
	sort.Ints(rs)
	rs = dedup(rs)
	if len(rs) == 0 || len(rs) == s.n {
		return ""
	}
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		parts = append(parts, fmt.Sprintf("shardRange(%s, '0x%016x', '%s')", Field, s.Start(rs[i]), s.hexEnd(rs[j])))
		i = j + 1
	}
	return strings.Join(parts, " || ")
}

func dedup(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func itoa(i int) string { return fmt.Sprint(i) }
