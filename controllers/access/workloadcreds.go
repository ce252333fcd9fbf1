package access

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// Reasons of the WorkloadCredentialsHealthy condition and of status.access.workloadCredentials[].reason, besides
// Judge's (NoExpiry, Valid, ExpiringSoon, Expired), ExpiryUnknown, and tenancy's InvalidCredentials (refused by
// Keystone, or a Secret that holds no usable credentials), OtherKeystone and CloudUnavailable.
const (
	// ReasonConsumersStale: the credentials are good, but pods that use the Secret started before its last
	// change was seen: they still hold the old credentials.
	ReasonConsumersStale = "ConsumersStale"
	// ReasonNotReadable: the operator may not read the Secret (forbidden): grant it (deploy/manifests/workload-rbac.yaml).
	ReasonNotReadable = "NotReadable"
	// ReasonNotFound: the workload cluster has no such Secret (for every Secret checked: the condition's reason).
	ReasonNotFound = "NotFound"
)

// WorkloadCredentialExpiryMetric is the unix time the credentials of a workload cluster's consumer Secret expire.
const WorkloadCredentialExpiryMetric = "vitals_workload_credentials_expiry_timestamp_seconds"

// maxPods bounds the list of kube-system's pods the consumers are judged from (one page).
const maxPods = 1000

// wlCached is the last authentication with one version of one consumer Secret: what a steady state reuses, so
// that a Secret is authenticated with once per resourceVersion (and Keystone), not at every proof.
type wlCached struct {
	version  string // the Secret's UID/resourceVersion
	keystone string // the normalized auth URL of the cluster's Keystone it was tried against
	kind     openstack.CredentialKind
	cred     *openstack.Credential // nil: see refusal or credErr
	refusal  *tenancy.Refusal
	credErr  string // the credentials authenticate, their expiry could not be read (openstack.Describe)
}

// wlCache holds wlCached per cluster and Secret.
type wlCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]wlCached
}

func (c *wlCache) get(cluster types.NamespacedName, secret string) (wlCached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[cluster][secret]
	return e, ok
}

func (c *wlCache) put(cluster types.NamespacedName, secret string, e wlCached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]map[string]wlCached{}
	}
	if c.m[cluster] == nil {
		c.m[cluster] = map[string]wlCached{}
	}
	c.m[cluster][secret] = e
}

func (c *wlCache) forget(cluster types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, cluster)
}

// wlCredResult is one check of a cluster's consumer Secrets, ready to be written.
type wlCredResult struct {
	cond    *metav1.Condition // nil: none (the check is off)
	entries []v1alpha1.WorkloadCredentialStatus
	keep    bool // nothing was learned (the cloud or the workload cluster could not be asked): keep the last
}

func (wr wlCredResult) apply(o *pass.Owned, c *v1alpha1.VitalsCluster) {
	if wr.keep {
		if prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionWorkloadCredentialsHealthy); prev != nil {
			o.Conditions = append(o.Conditions, metav1.Condition{Type: prev.Type, Status: prev.Status, Reason: prev.Reason, Message: prev.Message})
		}
		if c.Status.Access != nil {
			for i := range c.Status.Access.WorkloadCredentials {
				o.Status.Access.WorkloadCredentials = append(o.Status.Access.WorkloadCredentials, *c.Status.Access.WorkloadCredentials[i].DeepCopy())
			}
		}
		return
	}
	if wr.cond != nil {
		o.Conditions = append(o.Conditions, *wr.cond)
	}
	o.Status.Access.WorkloadCredentials = wr.entries
}

// checkWorkloadCredentials checks the workload cluster's consumer Secrets of c (spec.workloadCredentials): each
// one's credentials are tried against the Keystone the cluster's own credentials proved, and only that one
// (tenancy.Keystone), once per version of the Secret; their expiry is judged as the cluster's own (Judge); after a
// change of the Secret, the pods of kube-system that use it and started before the change was seen are named as
// stale. Nothing a Secret holds is ever written, logged or put in an error.
func (r *Reconciler) checkWorkloadCredentials(ctx context.Context, c *v1alpha1.VitalsCluster, cloud cloudResult, wc workload.Cluster) wlCredResult {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	refs := c.Spec.WorkloadCredentials.Checked()
	if len(refs) == 0 || r.d.Workload == nil {
		r.o.Credentials.forgetWorkload(key)
		r.wl.forget(key)
		return wlCredResult{}
	}
	if cloud.scope == nil || cloud.scope.Keystone == nil || wc == nil || wc.Healthy() != nil {
		// Without the cluster's own Keystone proven, or the workload cluster's answer, nothing new is known.
		return wlCredResult{keep: true}
	}
	now := r.d.Clock.Now()
	var prev []v1alpha1.WorkloadCredentialStatus
	if c.Status.Access != nil {
		prev = c.Status.Access.WorkloadCredentials
	}
	pods := &podLister{c: wc.Client()}
	res := wlCredResult{}
	r.o.Credentials.forgetWorkload(key) // the series of Secrets no longer checked go too
	auth := func(ctx context.Context, sec *corev1.Secret, k string, ref v1alpha1.WorkloadCredentialsSecret, id, source string) wlCached {
		return r.authenticate(ctx, key, cloud.scope.Keystone, sec, k, ref, id, source)
	}
	for _, ref := range refs {
		e := checkSecret(ctx, wc.Client(), ref, prev, now, r.o.ExpiryWarning, auth)
		if e.ChangeSeen != nil {
			r.judgeConsumers(ctx, &e, ref.Name, pods)
		}
		res.entries = append(res.entries, e)
		if e.ExpiresAt != nil {
			r.o.Credentials.WorkloadExpiry.WithLabelValues(key.String(), e.Secret).Set(float64(e.ExpiresAt.Unix()))
		}
	}
	res.cond = workloadCondition(res.entries)
	if p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionWorkloadCredentialsHealthy); p == nil || p.Reason != res.cond.Reason || p.Message != res.cond.Message {
		typ := corev1.EventTypeNormal
		if res.cond.Status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.event(c, typ, "Workload"+res.cond.Reason, "CheckWorkloadCredentials", res.cond.Message)
		logf.FromContext(ctx).Info("workload credentials health changed", "reason", res.cond.Reason, "message", res.cond.Message)
	}
	return res
}

// CheckWorkloadSecrets checks c's consumer Secrets (spec.workloadCredentials) once, as the access controller does,
// for vitals doctor: read through cl, each one's credentials tried against ks (the Keystone the cluster's own
// credentials proved) and their expiry judged with the warning window; without the controller's memory of earlier
// checks (no change time, so no stale consumers) and without its cache. Nothing a Secret holds is ever in the
// result.
func CheckWorkloadSecrets(ctx context.Context, c *v1alpha1.VitalsCluster, ks *tenancy.Keystone, cl client.Reader, now time.Time, window time.Duration) (entries []v1alpha1.WorkloadCredentialStatus, cond *metav1.Condition) {
	auth := func(ctx context.Context, sec *corev1.Secret, k string, ref v1alpha1.WorkloadCredentialsSecret, id, source string) wlCached {
		return authenticateSecret(ctx, ks, sec, k, ref, source)
	}
	for _, ref := range c.Spec.WorkloadCredentials.Checked() {
		entries = append(entries, checkSecret(ctx, cl, ref, nil, now, window, auth))
	}
	if len(entries) == 0 {
		return nil, nil
	}
	return entries, workloadCondition(entries)
}

// WorkloadStatus is the condition status a consumer Secret's reason gives WorkloadCredentialsHealthy.
func WorkloadStatus(reason string) metav1.ConditionStatus { return workloadStatus(reason) }

// authFunc tries a Secret's credentials (the reconciler's cache in front of authenticateSecret, or not).
type authFunc func(ctx context.Context, sec *corev1.Secret, key string, ref v1alpha1.WorkloadCredentialsSecret, id, source string) wlCached

// checkSecret checks one consumer Secret, read through cl (its consumers are judged apart: judgeConsumers).
func checkSecret(ctx context.Context, cl client.Reader, ref v1alpha1.WorkloadCredentialsSecret, prev []v1alpha1.WorkloadCredentialStatus,
	now time.Time, window time.Duration, auth authFunc) v1alpha1.WorkloadCredentialStatus {
	consumer := ref.Consumer
	if consumer == "" {
		consumer = ref.Name
	}
	ns := v1alpha1.WorkloadCredentialsNamespace
	e := v1alpha1.WorkloadCredentialStatus{Secret: ns + "/" + ref.Name, Consumer: consumer}
	var sec corev1.Secret
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &sec); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			e.Reason, e.Message = ReasonNotFound, fmt.Sprintf("workload secret %s/%s (%s): not found", ns, ref.Name, consumer)
		case apierrors.IsForbidden(err):
			e.Reason, e.Message = ReasonNotReadable, fmt.Sprintf("workload secret %s/%s (%s): not readable (forbidden): grant get on Secrets in %s (deploy/manifests/workload-rbac.yaml)", ns, ref.Name, consumer, ns)
		default:
			e.Reason, e.Message = ReasonSecretUnreadable, fmt.Sprintf("workload secret %s/%s (%s): could not be read: %s", ns, ref.Name, consumer, describeAPI(err))
		}
		return e
	}
	k := secretKey(&sec, ref)
	if k == "" {
		want := KeyCloudConf + " or " + KeyCloudsYAML
		if ref.Key != "" {
			want = ref.Key
		}
		e.Reason, e.Message = tenancy.ReasonInvalidCredentials, fmt.Sprintf("workload secret %s/%s (%s): no key %s", ns, ref.Name, consumer, want)
		return e
	}
	e.Secret += " key " + k
	source := fmt.Sprintf("workload secret %s/%s key %s (%s)", ns, ref.Name, k, consumer)
	e.SecretResourceVersion = sec.ResourceVersion
	for i := range prev {
		p := &prev[i]
		if p.Secret != e.Secret {
			continue
		}
		switch {
		case p.SecretResourceVersion == sec.ResourceVersion:
			e.ChangeSeen = p.ChangeSeen.DeepCopy()
		case p.SecretResourceVersion != "":
			e.ChangeSeen = &metav1.Time{Time: now.UTC().Truncate(time.Second)}
		}
	}
	a := auth(ctx, &sec, k, ref, e.Secret, source)
	switch {
	case a.refusal != nil:
		e.Reason, e.Message = a.refusal.Reason, a.refusal.Message
	case a.cred == nil:
		e.Kind, e.Reason = string(a.kind), ReasonExpiryUnknown
		e.Message = "the credentials of " + source + " authenticate; when they expire could not be read: " + a.credErr
	default:
		e.Kind = string(a.cred.Kind)
		if !a.cred.ExpiresAt.IsZero() {
			e.ExpiresAt = &metav1.Time{Time: a.cred.ExpiresAt.UTC().Truncate(time.Second)}
		}
		_, e.Reason, e.Message = Judge(*a.cred, source, now, window)
	}
	return e
}

// judgeConsumers names the pods of kube-system that use the Secret and started before its change was seen.
func (r *Reconciler) judgeConsumers(ctx context.Context, e *v1alpha1.WorkloadCredentialStatus, name string, pods *podLister) {
	list, truncated, err := pods.list(ctx)
	if err != nil {
		why := describeAPI(err)
		if apierrors.IsForbidden(err) {
			why = "pods in " + v1alpha1.WorkloadCredentialsNamespace + " not listable (forbidden)"
		}
		e.Message += "; its consumers were not judged: " + why
		return
	}
	n, stale, more := staleConsumers(list, name, e.ChangeSeen.Time)
	e.StaleConsumers = stale
	if len(stale) == 0 {
		if n > 0 {
			e.Message += fmt.Sprintf("; its %d consumer pod(s) started after its change seen at %s", n, e.ChangeSeen.UTC().Format(time.RFC3339))
		}
	} else {
		names := strings.Join(stale, ", ")
		if more > 0 {
			names += fmt.Sprintf(" and %d more", more)
		}
		e.Message += fmt.Sprintf("; %d of its %d consumer pod(s) started before its change seen at %s and still hold the old credentials: %s (restart them)",
			len(stale)+more, n, e.ChangeSeen.UTC().Format(time.RFC3339), names)
		if e.Reason == ReasonValid || e.Reason == ReasonNoExpiry {
			e.Reason = ReasonConsumersStale
		}
	}
	if truncated {
		e.Message += fmt.Sprintf("; only the first %d pods of %s were judged", maxPods, v1alpha1.WorkloadCredentialsNamespace)
	}
}

// authenticate tries the credentials of sec's key against ks, or answers from the cache when this version of the
// Secret was tried against the same Keystone before. A Keystone that could not be asked is not cached.
func (r *Reconciler) authenticate(ctx context.Context, cluster types.NamespacedName, ks *tenancy.Keystone, sec *corev1.Secret, key string,
	ref v1alpha1.WorkloadCredentialsSecret, id, source string) wlCached {
	version := string(sec.UID) + "/" + sec.ResourceVersion
	keystone, _ := tenancy.NormalizeAuthURL(ks.AuthURL())
	if e, ok := r.wl.get(cluster, id); ok && e.version == version && e.keystone == keystone {
		return e
	}
	e := authenticateSecret(ctx, ks, sec, key, ref, source)
	e.version, e.keystone = version, keystone
	switch {
	case e.refusal != nil && e.refusal.Reason == tenancy.ReasonCloudUnavailable:
		// a Keystone that could not be asked is not cached
	case e.refusal == nil && e.cred == nil:
		// the expiry could not be read: asked again next time
	default:
		r.wl.put(cluster, id, e)
	}
	if e.refusal != nil {
		logf.FromContext(ctx).Info("workload credentials not proven", "secret", id, "reason", e.refusal.Reason)
	} else if e.cred != nil {
		logf.FromContext(ctx).Info("workload credentials authenticated", "secret", id, "kind", string(e.cred.Kind))
	}
	return e
}

// authenticateSecret tries the credentials of sec's key against ks, with no cache.
func authenticateSecret(ctx context.Context, ks *tenancy.Keystone, sec *corev1.Secret, key string, ref v1alpha1.WorkloadCredentialsSecret, source string) wlCached {
	var e wlCached
	auth, err := secretAuth(sec, key, ref, source)
	if err != nil {
		// The parsers' errors name the Secret, the line and the field, never a value.
		e.refusal = &tenancy.Refusal{Reason: tenancy.ReasonInvalidCredentials, Message: err.Error()}
		return e
	}
	e.kind = openstack.CredentialPassword
	if auth.Options.ApplicationCredentialID != "" || auth.Options.ApplicationCredentialName != "" {
		e.kind = openstack.CredentialApplication
	}
	cr, refusal := ks.Authenticate(ctx, auth, source)
	if refusal != nil {
		e.refusal = refusal
		return e
	}
	cred, err := cr.Credential(ctx)
	if err != nil {
		// Classified where it entered package openstack: it quotes nothing the cloud said.
		e.credErr = openstack.Describe(err)
		return e
	}
	e.cred = &cred
	return e
}

// podLister lists kube-system's pods once per check, for every Secret that needs them.
type podLister struct {
	c         client.Reader
	done      bool
	pods      []corev1.Pod
	truncated bool
	err       error
}

func (p *podLister) list(ctx context.Context) ([]corev1.Pod, bool, error) {
	if !p.done {
		p.done = true
		var l corev1.PodList
		p.err = p.c.List(ctx, &l, client.InNamespace(v1alpha1.WorkloadCredentialsNamespace), client.Limit(maxPods))
		p.pods, p.truncated = l.Items, l.Continue != ""
	}
	return p.pods, p.truncated, p.err
}

// workloadRank orders the reasons from the worst: the condition takes the worst entry's reason. NotFound counts only
// when every Secret is missing.
var workloadRank = []string{ReasonExpired, tenancy.ReasonInvalidCredentials, ReasonExpiringSoon, ReasonConsumersStale,
	tenancy.ReasonCloudUnavailable, ReasonSecretUnreadable, ReasonExpiryUnknown, ReasonNotReadable, tenancy.ReasonOtherKeystone,
	ReasonValid, ReasonNoExpiry, ReasonNotFound}

// workloadStatus is the condition status of a reason.
func workloadStatus(reason string) metav1.ConditionStatus {
	switch reason {
	case ReasonExpired, tenancy.ReasonInvalidCredentials, ReasonExpiringSoon, ReasonConsumersStale:
		return metav1.ConditionFalse
	case ReasonValid, ReasonNoExpiry:
		return metav1.ConditionTrue
	}
	return metav1.ConditionUnknown
}

// maxConditionMessage bounds the condition's message (each entry's is in the status).
const maxConditionMessage = 2048

// workloadCondition is WorkloadCredentialsHealthy of entries: the worst entry's reason and status, and the
// messages of the entries that are not found last (a Secret that does not exist is no problem while another does).
func workloadCondition(entries []v1alpha1.WorkloadCredentialStatus) *metav1.Condition {
	worst := len(workloadRank)
	var msgs []string
	for _, e := range entries {
		i := slices.Index(workloadRank, e.Reason)
		if i < 0 {
			i = slices.Index(workloadRank, tenancy.ReasonCloudUnavailable)
		}
		worst = min(worst, i)
		if e.Reason != ReasonNotFound {
			msgs = append(msgs, e.Message)
		}
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionWorkloadCredentialsHealthy}
	if worst == len(workloadRank) {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, ReasonNotFound, "no workload secret to check"
		return cond
	}
	cond.Reason = workloadRank[worst]
	cond.Status = workloadStatus(cond.Reason)
	if len(msgs) == 0 {
		for _, e := range entries {
			msgs = append(msgs, e.Message)
		}
		msgs = append(msgs, "name the consumers' Secrets in spec.workloadCredentials.secrets")
	}
	cond.Message = strings.Join(msgs, "; ")
	if len(cond.Message) > maxConditionMessage {
		cond.Message = cond.Message[:maxConditionMessage-3] + "..."
	}
	return cond
}

// describeAPI says what a workload API call's error is without quoting the server's answer (a workload cluster's
// API server is the tenant's): its HTTP status and reason, or that no answer came.
func describeAPI(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return fmt.Sprintf("the API answered HTTP %d (%s)", s.Code, s.Reason)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "the API did not answer in time"
	}
	return "the API could not be reached"
}
