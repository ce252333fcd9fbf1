package clusterstatus

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
)

// Bounds of what a controller writes: an Event note and a condition message.
const (
	MaxEventNote        = 1000
	MaxConditionMessage = 32000
)

// Write applies mutate to c's status and updates it. On a conflict it reads c again from live (the API
// server: nil means cl) and applies mutate again: the controllers of one replica write the same cluster's
// status, and a re-read from an informer cache that lags the API server conflicts again and again (845
// failed writes in 3 minutes in the 10,000-cluster bench, docs/benchmarks.md, issue 17). A status mutate
// leaves as it was is not written: at thousands of clusters, the passes that change nothing (the access
// controller's proofs, mostly) would otherwise cost a request each, which the operator's client rate
// limit makes every other pass wait for. A cluster deleted meanwhile is not an error.
func Write(ctx context.Context, cl client.Client, live client.Reader, c *v1alpha1.VitalsCluster, mutate func(*v1alpha1.ClusterStatus)) error {
	return RetryOnConflict(ctx, live, cl, c, func() error {
		before := c.Status.DeepCopy()
		mutate(&c.Status)
		if equality.Semantic.DeepEqual(before, &c.Status) {
			return nil
		}
		if err := cl.Status().Update(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// RetryOnConflict runs write on c, and on a conflict reads c again from live (nil: fallback, the cache)
// and runs write again, a few times: the status writes of the other controllers change c's version, which
// the informer cache may not show yet.
func RetryOnConflict(ctx context.Context, live, fallback client.Reader, c *v1alpha1.VitalsCluster, write func() error) error {
	if live == nil {
		live = fallback
	}
	key := client.ObjectKeyFromObject(c)
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			// into a new object: a field the API server's answer omits must not keep what write set
			var fresh v1alpha1.VitalsCluster
			if err := live.Get(ctx, key, &fresh); err != nil {
				return err
			}
			*c = fresh
		}
		first = false
		return write()
	})
}

// Fenced returns ctx carrying the fence of c's status and finalizer writes (remediation.Fencer: this
// replica's fenced validity for c, no pause): the operator's client refuses a write without one. A nil
// fencer adds none (a client that does not fence, in tests).
func Fenced(ctx context.Context, f remediation.Fencer, c *v1alpha1.VitalsCluster) context.Context {
	if f == nil {
		return ctx
	}
	return fencing.With(ctx, f.StatusFence(c))
}

// SetCondition sets one condition of st for generation gen, its message cut to MaxConditionMessage.
func SetCondition(st *v1alpha1.ClusterStatus, gen int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > MaxConditionMessage {
		msg = msg[:MaxConditionMessage]
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// AppendActions appends lines to st's actions, newest last, and keeps the last v1alpha1.MaxActions.
func AppendActions(st *v1alpha1.ClusterStatus, lines ...v1alpha1.Action) {
	st.Actions = append(st.Actions, lines...)
	if n := len(st.Actions) - v1alpha1.MaxActions; n > 0 {
		st.Actions = append([]v1alpha1.Action(nil), st.Actions[n:]...)
	}
}

// Event records an Event on c, its note cut to MaxEventNote; a nil recorder records nothing.
func Event(rec events.EventRecorder, c *v1alpha1.VitalsCluster, typ, reason, action, note string) {
	if rec == nil {
		return
	}
	if len(note) > MaxEventNote {
		note = note[:MaxEventNote]
	}
	rec.Eventf(c, nil, typ, reason, action, "%s", note)
}

// Get reads the cluster of key for a pass. When it is gone, gone runs (to drop what is kept for it) and
// Get returns nil and no error.
func Get(ctx context.Context, c client.Client, key client.ObjectKey, gone func()) (*v1alpha1.VitalsCluster, error) {
	var vc v1alpha1.VitalsCluster
	if err := c.Get(ctx, key, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			gone()
			return nil, nil
		}
		return nil, fmt.Errorf("get cluster %s: %w", key, err)
	}
	return &vc, nil
}
