package sharding

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// TestHashIsTheAPIServers: Hash is the function of the API server's shardRange() (apimachinery's).
func TestHashIsTheAPIServers(t *testing.T) {
	for _, uid := range []types.UID{"", "0", "6f1c2b5e-9d1e-4a53-b1e8-3f7d3f9d0a11", "ffffffff-ffff-ffff-ffff-ffffffffffff"} {
		if got, want := fmt.Sprintf("%016x", Hash(uid)), apisharding.HashField(string(uid)); got != want {
			t.Errorf("Hash(%q) = %s, the API server's = %s", uid, got, want)
		}
	}
}

func TestNewSpace(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{1, true}, {2, true}, {16, true}, {1024, true}, {0, false}, {3, false}, {12, false}, {2048, false}, {-4, false}} {
		if _, err := NewSpace(tc.n); (err == nil) != tc.ok {
			t.Errorf("NewSpace(%d): err %v, want ok %v", tc.n, err, tc.ok)
		}
	}
}

func TestSpace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		held   []int
		sel    string
		bounds map[int]string
	}{
		{name: "one range is the whole space", n: 1, held: []int{0}, sel: "",
			bounds: map[int]string{0: "0x0000000000000000-0x10000000000000000"}},
		{name: "none held", n: 4, held: nil, sel: ""},
		{name: "all held", n: 4, held: []int{3, 2, 1, 0}, sel: ""},
		{name: "adjacent ranges are joined", n: 4, held: []int{1, 2},
			sel: "shardRange(object.metadata.uid, '0x4000000000000000', '0xc000000000000000')"},
		{name: "the last range ends at 2^64", n: 4, held: []int{0, 3, 3},
			sel: "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || " +
				"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
			bounds: map[int]string{3: "0xc000000000000000-0x10000000000000000"}},
		{name: "sixteen", n: 16, held: []int{15, 1},
			sel: "shardRange(object.metadata.uid, '0x1000000000000000', '0x2000000000000000') || " +
				"shardRange(object.metadata.uid, '0xf000000000000000', '0x10000000000000000')",
			bounds: map[int]string{1: "0x1000000000000000-0x2000000000000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSpace(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Selector(tc.held); got != tc.sel {
				t.Errorf("Selector(%v) = %q, want %q", tc.held, got, tc.sel)
			}
			for i, want := range tc.bounds {
				if got := s.Bounds(i); got != want {
					t.Errorf("Bounds(%d) = %s, want %s", i, got, want)
				}
			}
		})
	}
}

// TestOfAgreesWithTheSelector: the range Space.Of gives a UID is the one whose selector the API server's
// matcher accepts it for, and no other.
func TestOfAgreesWithTheSelector(t *testing.T) {
	s, _ := NewSpace(16)
	sels := make([]apisharding.Selector, s.Len())
	for i := range sels {
		b := s.Bounds(i)
		sels[i] = apisharding.NewSelector(apisharding.ShardRangeRequirement{Key: Field, Start: b[:18], End: b[19:]})
	}
	for k := range 2000 {
		uid := types.UID("uid-" + strconv.Itoa(k))
		got := s.Of(uid)
		for i, sel := range sels {
			ok := matchUID(t, sel, uid)
			if ok != (i == got) {
				t.Fatalf("uid %s (hash %016x): Of = %d, the API server's selector of range %d says %v", uid, Hash(uid), got, i, ok)
			}
		}
	}
	if got := s.Of(types.UID("x")); got < 0 || got >= s.Len() {
		t.Fatalf("Of out of range: %d", got)
	}
	if s.Start(s.Len()-1) != math.MaxUint64-(1<<60)+1 {
		t.Errorf("start of the last range %x", s.Start(s.Len()-1))
	}
}

func matchUID(t *testing.T, sel apisharding.Selector, uid types.UID) bool {
	t.Helper()
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	ok, err := sel.Matches(obj)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
