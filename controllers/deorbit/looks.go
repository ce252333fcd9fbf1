package deorbit

import "time"

// lookAfter is when the wait for the cloud looks again, after a look that found left of before
// resources still deleting, elapsed into the wait.
//
// The deletes were issued together (a step issues up to its budget at once), so the cloud finishes
// them together: once a look finds some of them gone and others not, the rest are due within about
// the time their deletes took to issue, and the next look comes after minPoll (250 ms). Otherwise the
// wait between looks grows with the time already waited (pollAfter: a quarter of it, from minPoll to
// Poll), so that a slow cloud is asked less and less often.
//
// What this costs the cloud: a look is one list of the project per kind, whatever the number of
// resources waited on, and a fast look only follows a look that found at least one of them gone, so
// there are at most as many fast looks as resources waited on, and never more than 4 a second.
func (s *step) lookAfter(elapsed time.Duration, before, left int) time.Duration {
	if left > 0 && left < before {
		return minPoll
	}
	return s.pollAfter(elapsed)
}
