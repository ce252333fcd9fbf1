package deorbit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"golang.org/x/sync/errgroup"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
)

// Outcomes of the deletes metric.
const (
	OutcomeDeleted = "deleted"
	OutcomeGone    = "gone"
	OutcomeFailed  = "failed"
	OutcomeHeld    = "held"
	OutcomeDryRun  = "dryrun"
)

// track returns the tracked resource of type typ and id (a resource without an ID yet, such as a load
// balancer known by its cloud controller manager name only, by its name), adding it (with state) when
// new. The pointer is valid until the next track of a new resource.
func (s *step) track(typ, id, name, state string) *v1alpha1.DeorbitResource {
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type == typ && (id != "" && r.ID == id || id == "" && r.ID == "" && r.Name == name) {
			if name != "" && r.Name == "" {
				r.Name = name
			}
			return r
		}
	}
	s.st.Resources = append(s.st.Resources, v1alpha1.DeorbitResource{Type: typ, ID: id, Name: name, State: state})
	return &s.st.Resources[len(s.st.Resources)-1]
}

// find returns the tracked resource, or nil.
func (s *step) find(typ, id string) *v1alpha1.DeorbitResource {
	for i := range s.st.Resources {
		if r := &s.st.Resources[i]; r.Type == typ && r.ID == id {
			return r
		}
	}
	return nil
}

func (s *step) count(pred func(*v1alpha1.DeorbitResource) bool) int {
	n := 0
	for i := range s.st.Resources {
		if pred(&s.st.Resources[i]) {
			n++
		}
	}
	return n
}

// Importance of a tracked resource for capResources, most important first.
const (
	// rankActive: something was done to it or is known of it that no read finds again: its delete was accepted
	// (left out, the next list would show it Pending and it would be deleted twice) or failed (its attempts and
	// backoff), or it is not proven the cluster's (the report of what was never touched).
	rankActive  = iota
	rankPending // nothing done to it yet (a reason at most): the next read of the cloud or the workload cluster finds it again
	rankKept    // kept: a decision that protects data, dropped only after every gone one
	rankGone    // confirmed gone
)

func rank(r *v1alpha1.DeorbitResource) int {
	switch {
	case r.State == v1alpha1.DeorbitGone:
		return rankGone
	case r.State == v1alpha1.DeorbitKept:
		return rankKept
	case r.State == v1alpha1.DeorbitDeleting, r.State == v1alpha1.DeorbitUnproven, r.Attempts > 0:
		return rankActive
	}
	return rankPending
}

// capResources keeps status.deorbit.resources (and notProven) within v1alpha1.MaxDeorbitResources entries: the
// least important are left out (gone first, then kept, then those nothing was done to yet; those being deleted,
// whose delete failed or not proven the cluster's last; the latest tracked first within each), and counted in
// status.deorbit.resourcesOmitted: gone and kept ones for good (done, counted once), the others for this step
// (the next step's reads find them again). The order of the entries kept does not change.
func (s *step) capResources() {
	st := s.st
	var om v1alpha1.DeorbitOmitted
	if st.ResourcesOmitted != nil {
		om = *st.ResourcesOmitted
	}
	if over := len(st.Resources) - v1alpha1.MaxDeorbitResources; over > 0 {
		order := make([]int, len(st.Resources))
		for i := range order {
			order[i] = i
		}
		// the least important first, the latest first within a rank
		slices.SortStableFunc(order, func(a, b int) int {
			if c := cmp.Compare(rank(&st.Resources[b]), rank(&st.Resources[a])); c != 0 {
				return c
			}
			return cmp.Compare(b, a)
		})
		drop := make(map[int]bool, over)
		for _, i := range order[:over] {
			drop[i] = true
			if rank(&st.Resources[i]) >= rankKept {
				om.Done++
			} else {
				s.omittedRemaining++
			}
		}
		kept := st.Resources[:0]
		for i, r := range st.Resources {
			if !drop[i] {
				kept = append(kept, r)
			}
		}
		clear(st.Resources[len(kept):])
		st.Resources = kept
	}
	om.Remaining = s.omittedRemaining
	if om == (v1alpha1.DeorbitOmitted{}) {
		st.ResourcesOmitted = nil
	} else {
		st.ResourcesOmitted = &om
	}
	if len(st.NotProven) > v1alpha1.MaxDeorbitResources {
		st.NotProven = st.NotProven[:v1alpha1.MaxDeorbitResources]
	}
}

// countAll updates the counts: done is gone or kept, or a Kubernetes object whose delete was accepted
// (Kubernetes finishes it; the cloud's answer is what deorbit waits for); the rest remains. Resources left out of
// the list (status.deorbit.resourcesOmitted) count too.
func (s *step) countAll() {
	c := v1alpha1.DeorbitCounts{Total: int32(len(s.st.Resources))}
	if om := s.st.ResourcesOmitted; om != nil {
		c.Total += om.Done + om.Remaining
		c.Done += om.Done
	}
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		switch {
		case r.State == v1alpha1.DeorbitGone, r.State == v1alpha1.DeorbitKept:
			c.Done++
		case r.State == v1alpha1.DeorbitDeleting && workloadType(r.Type):
			c.Done++
		}
	}
	c.Remaining = c.Total - c.Done
	s.st.Counts = c
}

// due reports whether r's delete may be tried now.
func (s *step) due(r *v1alpha1.DeorbitResource) bool {
	return r.NextAttempt == nil || !s.now.Before(r.NextAttempt.Time)
}

// nextAttempt is the earliest retry among rs that is not due yet (zero: none).
func nextAttempt(rs []*v1alpha1.DeorbitResource) time.Time {
	var t time.Time
	for _, r := range rs {
		if r.NextAttempt != nil {
			t = minTime(t, r.NextAttempt.Time)
		}
	}
	return t
}

// deletion is one delete deorbit wants to make.
type deletion struct {
	r      *v1alpha1.DeorbitResource
	action remediation.Action
	// del deletes; an error for which gone is true means the object was already gone.
	del  func(ctx context.Context) error
	gone func(error) bool
	// left (nil: none) names why the cloud refused the delete for what the object still holds (a volume's
	// snapshots), or "": such an object is left with that reason and tried again after the backoff, and
	// the step does not fail (it is in the debris report if it is still there at the give-up).
	left func(error) string
}

// deleteAll asks the policy for each deletion (in order, within the step's budget) and runs the
// allowed ones in parallel, at most Workers at a time; every goroutine ends before it returns. An
// allowed delete that succeeds leaves its resource Deleting (the caller confirms it gone later); a
// failed one is tried again after a backoff with jitter.
func (s *step) deleteAll(ctx context.Context, ds []deletion) {
	var allowed []deletion
	for _, d := range ds {
		if !s.due(d.r) {
			continue
		}
		if s.issued >= s.in.Settings.Budget {
			d.r.LastError = fmt.Sprintf("this step's cap of %d deletes is reached", s.in.Settings.Budget)
			continue
		}
		d.action.Teardown = true
		dec := s.in.Policy.Ask(ctx, d.action)
		switch dec.Outcome {
		case remediation.Allowed:
			s.issued++
			allowed = append(allowed, d)
		case remediation.DryRun:
			d.r.State = v1alpha1.DeorbitWouldDelete
			d.r.LastError = ""
			s.e.Metrics.delete(d.r.Type, OutcomeDryRun)
		default:
			s.e.Metrics.delete(d.r.Type, OutcomeHeld)
			if dec.Reason == remediation.ReasonExcluded {
				d.r.State = v1alpha1.DeorbitKept
				d.r.LastError = dec.Reason + ": " + dec.Message
				continue
			}
			d.r.LastError = dec.Reason + ": " + dec.Message
			retry := dec.RetryAt
			if retry.IsZero() || !retry.After(s.now) {
				retry = s.now.Add(s.e.poll())
			}
			d.r.NextAttempt = &metav1.Time{Time: retry}
		}
	}
	if len(allowed) == 0 {
		return
	}
	errs := make([]error, len(allowed))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.e.workers())
	for i, d := range allowed {
		g.Go(func() error {
			// sent only through its fence: re-checked at the write (range, pauses, exclusion, dry-run)
			errs[i] = d.del(fencing.With(gctx, s.in.Policy.Fence(d.action)))
			return nil
		})
	}
	_ = g.Wait()
	for i, d := range allowed {
		r, err := d.r, errs[i]
		r.Attempts++
		switch {
		case err == nil:
			r.State, r.LastError, r.NextAttempt = v1alpha1.DeorbitDeleting, "", nil
			s.e.Metrics.delete(r.Type, OutcomeDeleted)
			s.in.Policy.Done(ctx, d.action, nil)
		case isFenced(err):
			// refused at the write (recorded by the policy as a hold): asked again at the next look
			r.Attempts--
			r.LastError = err.Error()
			r.NextAttempt = &metav1.Time{Time: s.now.Add(s.e.poll())}
			s.e.Metrics.delete(r.Type, OutcomeHeld)
			s.in.Policy.Done(ctx, d.action, err)
		case d.gone != nil && d.gone(err):
			r.State, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", nil
			s.e.Metrics.delete(r.Type, OutcomeGone)
			s.in.Policy.Done(ctx, d.action, nil)
		case d.left != nil && d.left(err) != "":
			r.LastError = d.left(err) // not a failure of the step
			r.NextAttempt = &metav1.Time{Time: s.now.Add(s.e.backoff(r.Attempts))}
			s.e.Metrics.delete(r.Type, OutcomeFailed)
			s.in.Policy.Done(ctx, d.action, err)
		default:
			r.LastError = err.Error()
			r.NextAttempt = &metav1.Time{Time: s.now.Add(s.e.backoff(r.Attempts))}
			s.e.Metrics.delete(r.Type, OutcomeFailed)
			s.in.Policy.Done(ctx, d.action, err)
			s.fail(err)
		}
	}
}

// isFenced: the write was refused at its fence, never sent.
func isFenced(err error) bool {
	_, ok := fencing.ReasonOf(err)
	return ok
}

// parallel runs f for each item, at most Workers at a time, and returns once all have ended.
func parallel[T any](ctx context.Context, workers int, items []T, f func(context.Context, T)) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, it := range items {
		g.Go(func() error { f(gctx, it); return nil })
	}
	_ = g.Wait()
}

func workloadType(typ string) bool {
	switch typ {
	case v1alpha1.DeorbitVolumeSnapshot, v1alpha1.DeorbitClaim, v1alpha1.DeorbitService:
		return true
	}
	return false
}
