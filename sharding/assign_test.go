package sharding

import (
	"slices"
	"testing"
)

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		members []string
		holders []string
		want    []string
	}{
		{name: "no members", n: 4, members: nil, holders: nil, want: []string{"", "", "", ""}},
		{name: "one member takes all", n: 4, members: []string{"a"}, want: []string{"a", "a", "a", "a"}},
		{name: "two split evenly, in order", n: 4, members: []string{"b", "a"}, want: []string{"a", "a", "b", "b"}},
		{name: "uneven: the first in order gets one more", n: 4, members: []string{"a", "b", "c"}, want: []string{"a", "a", "b", "c"}},
		{name: "more members than ranges", n: 2, members: []string{"a", "b", "c"}, want: []string{"a", "b"}},
		{name: "duplicates count once", n: 2, members: []string{"a", "a"}, want: []string{"a", "a"}},
		{name: "holders keep their ranges", n: 4, members: []string{"a", "b"},
			holders: []string{"b", "a", "b", "a"}, want: []string{"b", "a", "b", "a"}},
		{name: "a joining member gets the surplus only", n: 4, members: []string{"a", "b"},
			holders: []string{"a", "a", "a", "a"}, want: []string{"a", "a", "b", "b"}},
		{name: "a leaving member's ranges go to the others", n: 4, members: []string{"a", "c"},
			holders: []string{"a", "b", "c", "b"}, want: []string{"a", "a", "c", "c"}},
		{name: "a holder that is no member is ignored", n: 2, members: []string{"a"},
			holders: []string{"ghost", "a"}, want: []string{"a", "a"}},
		{name: "over its share: the first ones stay", n: 4, members: []string{"a", "b"},
			holders: []string{"a", "a", "a", ""}, want: []string{"a", "a", "b", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Assign(tc.n, tc.members, tc.holders)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Assign(%d, %v, %v) = %v, want %v", tc.n, tc.members, tc.holders, got, tc.want)
			}
		})
	}
}

// TestAssignMovesLittle: from a balanced assignment, one member more or less moves only the ranges it must.
func TestAssignMovesLittle(t *testing.T) {
	members := []string{"a", "b", "c", "d"}
	cur := Assign(16, members, nil)
	for _, tc := range []struct {
		name    string
		members []string
		moves   int
	}{
		{"one leaves", []string{"a", "b", "d"}, 4},
		{"one joins", []string{"a", "b", "c", "d", "e"}, 3},
	} {
		next := Assign(16, tc.members, cur)
		moved := 0
		for i := range next {
			if next[i] != cur[i] {
				moved++
			}
		}
		if moved != tc.moves {
			t.Errorf("%s: %d ranges moved, want %d (%v -> %v)", tc.name, moved, tc.moves, cur, next)
		}
	}
}
