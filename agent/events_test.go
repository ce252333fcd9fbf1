package agent

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestSeenSetIsBounded(t *testing.T) {
	var s seenSet
	s.reset()
	for i := range 3 * maxSeen {
		s.put(types.UID(fmt.Sprint(i)), 1)
		if s.len() > maxSeen {
			t.Fatalf("after %d puts: %d remembered, bound %d", i+1, s.len(), maxSeen)
		}
	}
	last := types.UID(fmt.Sprint(3*maxSeen - 1))
	if n, ok := s.get(last); !ok || n != 1 {
		t.Fatal("the newest event was forgotten")
	}
	if _, ok := s.get("0"); ok {
		t.Fatal("the oldest event is still remembered")
	}
	// Updating a remembered event does not rotate the generations.
	s.put(last, 5)
	if n, _ := s.get(last); n != 5 {
		t.Fatalf("count = %d", n)
	}
	s.remove(last)
	if _, ok := s.get(last); ok {
		t.Fatal("removed event remembered")
	}
	s.keepOnly(map[types.UID]bool{types.UID(fmt.Sprint(3*maxSeen - 2)): true})
	if s.len() != 1 {
		t.Fatalf("keepOnly left %d", s.len())
	}
}
