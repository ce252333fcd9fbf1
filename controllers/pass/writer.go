package pass

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
)

// Bounds of what a controller writes: a condition message and an Event note.
const (
	MaxConditionMessage = 32000
	MaxEventNote        = 1000
)

// FieldManager is the field manager of one owner of a part of the status: "vitals-" and its name.
func FieldManager(owner string) string { return "vitals-" + owner }

// Owned is one owner's part of a VitalsCluster's status: some top-level status fields and some conditions.
type Owned struct {
	// Owner is a controller's name, or "remediation" or "ready"; its field manager is FieldManager(Owner).
	Owner string
	// Fields are the top-level status fields (JSON names) the owner writes, with their values in Status. A
	// field Status leaves empty is removed (the owner stops owning it).
	Fields []string
	// Status holds the values of Fields; its other fields and its Conditions are ignored.
	Status v1alpha1.ClusterStatus
	// Types are the condition types the owner writes, and Conditions their new values (type, status,
	// reason, message). The writer keeps a condition's LastTransitionTime while its status stays, and sets
	// its ObservedGeneration; an owned type left out of Conditions is removed.
	Types      []string
	Conditions []metav1.Condition
}

// Writer writes each owner's part of a VitalsCluster's status as a server-side apply of the owner's fields
// (field manager vitals-<owner>, ownership forced), and only when it differs from what the cluster shows.
// Owners never conflict with each other and never overwrite each other's fields, and a pass that changes
// nothing sends nothing: at thousands of clusters a write per pass would bound the fleet (issue 23,
// docs/benchmarks.md).
type Writer struct {
	Client client.Client
	// Clock stamps the conditions' transitions (nil: the real clock).
	Clock clock.PassiveClock
	// Metrics count the writes (nil: not counted).
	Metrics *WriterMetrics
	// Fencer fences each write by this replica's fenced validity for the cluster (nil: none, for a client
	// that does not fence).
	Fencer remediation.Fencer
}

// WriterMetrics count status writes by owner and result (written, unchanged, error).
type WriterMetrics struct {
	Writes *prometheus.CounterVec
}

// NewWriterMetrics creates the writer's metrics and registers them with reg (nil: not registered).
func NewWriterMetrics(reg prometheus.Registerer) *WriterMetrics {
	m := &WriterMetrics{Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vitals_status_writes_total",
		Help: "Writes of a VitalsCluster's status by owner (controller, remediation, ready) and result: written, unchanged (nothing sent), fenced (refused: the replica may not write the cluster now), error.",
	}, []string{"owner", "result"})}
	if reg != nil {
		reg.MustRegister(m.Writes)
	}
	return m
}

func (w *Writer) count(owner, result string) {
	if w.Metrics != nil {
		w.Metrics.Writes.WithLabelValues(owner, result).Inc()
	}
}

// Write applies o to c's status unless c already shows it, and reports whether it sent a write. On
// success c's status shows o. A cluster deleted meanwhile (or deleted and created again: the apply names
// c's UID) is not an error: nothing is written.
func (w *Writer) Write(ctx context.Context, c *v1alpha1.VitalsCluster, o Owned) (bool, error) {
	conds := w.conditions(c, o)
	want, err := fields(&o.Status, o.Fields)
	if err != nil {
		return false, err
	}
	have, err := fields(&c.Status, o.Fields)
	if err != nil {
		return false, err
	}
	if reflect.DeepEqual(want, have) && equalConditions(conds, owned(c.Status.Conditions, o.Types)) {
		w.count(o.Owner, "unchanged")
		return false, nil
	}
	status := map[string]any{}
	for f, v := range want {
		if v != nil {
			status[f] = v
		}
	}
	list := make([]any, 0, len(conds))
	for _, cd := range conds {
		m, err := toMap(cd)
		if err != nil {
			return false, err
		}
		list = append(list, m)
	}
	status["conditions"] = list
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "VitalsCluster",
		"metadata":   map[string]any{"name": c.Name, "namespace": c.Namespace, "uid": string(c.UID)},
		"status":     status,
	}}
	err = w.Client.Status().Apply(fenced(ctx, w.Fencer, c), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager(o.Owner)), client.ForceOwnership)
	switch {
	case err == nil:
	case isFenced(err):
		// this replica may not write the cluster any more (its range lost): nothing to retry here
		w.count(o.Owner, "fenced")
		return false, err
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// gone, or another object of the same name: nothing of this pass belongs to it
		w.count(o.Owner, "unchanged")
		return false, nil
	default:
		w.count(o.Owner, "error")
		return false, fmt.Errorf("apply the %s status of cluster %s/%s: %w", o.Owner, c.Namespace, c.Name, err)
	}
	w.count(o.Owner, "written")
	// the apply's answer is the object as stored: a later write with a precondition (a finalizer's
	// patch) needs its version
	if rv := u.GetResourceVersion(); rv != "" {
		c.ResourceVersion = rv
	}
	setFields(&c.Status, &o.Status, o.Fields)
	c.Status.Conditions = slices.DeleteFunc(c.Status.Conditions, func(cd metav1.Condition) bool { return slices.Contains(o.Types, cd.Type) })
	c.Status.Conditions = append(c.Status.Conditions, conds...)
	return true, nil
}

// conditions are o's owned conditions as they are to be written: transitions timed, generation set,
// messages bounded, in the order of o.Types.
func (w *Writer) conditions(c *v1alpha1.VitalsCluster, o Owned) []metav1.Condition {
	now := metav1.Now()
	if w.Clock != nil {
		now = metav1.NewTime(w.Clock.Now())
	}
	merged := slices.Clone(c.Status.Conditions)
	for _, cd := range o.Conditions {
		if len(cd.Message) > MaxConditionMessage {
			cd.Message = cd.Message[:MaxConditionMessage]
		}
		cd.ObservedGeneration = c.Generation
		cd.LastTransitionTime = now
		meta.SetStatusCondition(&merged, cd)
	}
	var out []metav1.Condition
	for _, t := range o.Types {
		if !slices.ContainsFunc(o.Conditions, func(cd metav1.Condition) bool { return cd.Type == t }) {
			continue
		}
		if cd := meta.FindStatusCondition(merged, t); cd != nil {
			out = append(out, *cd)
		}
	}
	return out
}

// owned are the conditions of types, in the order of types.
func owned(conds []metav1.Condition, types []string) []metav1.Condition {
	var out []metav1.Condition
	for _, t := range types {
		if cd := meta.FindStatusCondition(conds, t); cd != nil {
			out = append(out, *cd)
		}
	}
	return out
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}

// fields are the named top-level fields of st as JSON values (nil when absent): what the API server
// stores, so that equal values compare equal whatever their Go form.
func fields(st *v1alpha1.ClusterStatus, names []string) (map[string]any, error) {
	all, err := toMap(st)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(names))
	for _, n := range names {
		out[n] = all[n]
	}
	return out, nil
}

// setFields copies the named top-level fields of from into st.
func setFields(st, from *v1alpha1.ClusterStatus, names []string) {
	for _, n := range names {
		switch n {
		case "observedGeneration":
			st.ObservedGeneration = from.ObservedGeneration
		case "projectID":
			st.ProjectID = from.ProjectID
		case "remediation":
			st.Remediation = from.Remediation.DeepCopy()
		default:
			st.CopyBlock(n, from)
		}
	}
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode status: %w", err)
	}
	return m, nil
}

// RetryOnConflict runs write on c, and on a conflict reads c again from live (the API server, not the
// cache that lags it) and runs write again, a few times: for the writes that still need the object's
// version (finalizers). A field the API server's answer omits does not keep what write set: c is read
// into a new object.
func RetryOnConflict(ctx context.Context, live client.Reader, c *v1alpha1.VitalsCluster, write func() error) error {
	key := client.ObjectKeyFromObject(c)
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
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

// Event records an Event on c by controller's recorder (recorders nil: none), its note cut to
// MaxEventNote.
func Event(recorders func(string) events.EventRecorder, controller string, c *v1alpha1.VitalsCluster, typ, reason, action, note string) {
	if recorders == nil {
		return
	}
	rec := recorders(controller)
	if rec == nil {
		return
	}
	if len(note) > MaxEventNote {
		note = note[:MaxEventNote]
	}
	rec.Eventf(c, nil, typ, reason, action, "%s", note)
}

func isFenced(err error) bool {
	_, ok := fencing.ReasonOf(err)
	return ok
}
