package remediation

import (
	"slices"
	"time"
)

// window holds the times of the actions taken, oldest first. Times are whole seconds (as the status
// stores them), rounded up so that an action never leaves a window early.
type window []time.Time

// stamp is t as a window holds it.
func stamp(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s.UTC()
}

// add records an action at t.
func (w window) add(t time.Time) window {
	t = stamp(t)
	i, _ := slices.BinarySearchFunc(w, t, func(a, b time.Time) int { return a.Compare(b) })
	// after every equal time: the list stays sorted
	for i < len(w) && w[i].Equal(t) {
		i++
	}
	return slices.Insert(w, i, t)
}

// remove drops one action at t (as add stamped it), if there is one.
func (w window) remove(t time.Time) window {
	t = stamp(t)
	if i, ok := slices.BinarySearchFunc(w, t, func(a, b time.Time) int { return a.Compare(b) }); ok {
		return slices.Delete(w, i, i+1)
	}
	return w
}

// since counts the actions after cutoff (an action at cutoff has left the window).
func (w window) since(cutoff time.Time) int {
	n := 0
	for i := len(w) - 1; i >= 0 && w[i].After(cutoff); i-- {
		n++
	}
	return n
}

// oldestSince is the oldest action after cutoff; ok is false when there is none.
func (w window) oldestSince(cutoff time.Time) (time.Time, bool) {
	for _, t := range w {
		if t.After(cutoff) {
			return t, true
		}
	}
	return time.Time{}, false
}

// prune drops the actions at or before cutoff.
func (w window) prune(cutoff time.Time) window {
	i := 0
	for i < len(w) && !w[i].After(cutoff) {
		i++
	}
	return slices.Delete(w, 0, i)
}

// merge adds the actions of other that w does not hold yet, at most limit of them, newest first. Both
// are views of one history (the status another replica or controller wrote, and this replica's
// memory): a time held n times in one and m times in the other was max(n, m) actions.
func (w window) merge(other []time.Time, limit int) (window, []time.Time) {
	have := map[time.Time]int{}
	for _, t := range w {
		have[t]++
	}
	stamped := make([]time.Time, len(other))
	for i, t := range other {
		stamped[i] = stamp(t)
	}
	slices.SortFunc(stamped, func(a, b time.Time) int { return b.Compare(a) })
	var added []time.Time
	seen := map[time.Time]int{}
	for _, t := range stamped {
		if len(added) >= limit {
			break
		}
		seen[t]++
		if seen[t] > have[t] {
			w = w.add(t)
			added = append(added, t)
		}
	}
	return w, added
}
