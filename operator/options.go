package operator

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/health"
	oschecks "github.com/vitalsproject/vitals/health/checks/openstack"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/sharding"
)

// Options configure the operator. The zero value of each field takes the default noted.
type Options struct {
	// RestConfig of the cluster the operator runs against (required).
	RestConfig *rest.Config
	// Namespace to watch Clusters in ("": all namespaces).
	Namespace string

	// HealthAddr is where /livez, /readyz, /alive, /ready are served (default ":8082"; "0": off).
	HealthAddr string
	// MetricsAddr is where /metrics is served (default ":8080"; "0": off).
	MetricsAddr string
	// DrainDelay: on shutdown readiness fails at once and liveness passes for this long before
	// the servers and controllers stop (default 0).
	DrainDelay time.Duration
	// ShutdownTimeout bounds the wait for in-flight requests after the drain (default 10s).
	ShutdownTimeout time.Duration

	// LeaderElect turns leader election on (a Lease); replicas that do not lead stay idle.
	LeaderElect bool
	// Sharding makes every replica active, each on the VitalsClusters of the UID hash ranges it holds
	// (nil: off). It excludes LeaderElect; its Leases live next to the leader election's
	// (LeaderElectionNamespace, named after LeaderElectionID).
	Sharding *Sharding
	// LeaderElectionNamespace of the Lease (default: the in-cluster namespace, else "default").
	LeaderElectionNamespace string
	// LeaderElectionID is the Lease's name (default "vitals-operator").
	LeaderElectionID string
	// Identity of this replica in the Lease (default: hostname_random).
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod of leader election (default 20s, 12s, 2s). The leader acts
	// until the send time of its last successful renewal plus RenewDeadline: a safety margin of
	// LeaseDuration - RenewDeadline before another replica may take over (see WriteTimeout).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// WriteTimeout bounds every write (cloud and Kubernetes) besides the fenced validity (package
	// fencing). It must be shorter than the safety margin in force: the shard safety margin with
	// sharding, LeaseDuration - RenewDeadline with leader election (default fencing.DefaultWriteTimeout,
	// or half that margin when it is shorter).
	WriteTimeout time.Duration

	// Cloud is the operator's default OpenStack credentials, used by Clusters without their own and
	// by the Keystone and Neutron readiness checks (nil: none).
	Cloud *openstack.Auth
	// Connect connects to a cloud (default openstack.Connect); tests may wrap it.
	Connect ConnectFunc

	// TrustedNamespaces may use the operator's own credentials (Cloud) for VitalsClusters without a
	// credentials Secret; no other namespace can (default: none).
	TrustedNamespaces []string
	// TrustedAuthURLs are Keystone URL prefixes whose catalogs the operator trusts for a credentials
	// Secret's auth_url; Cloud's auth URL is always one. Any other auth_url is connected to over
	// addresses that are not loopback, link-local or multicast only.
	TrustedAuthURLs []string
	// MaxPodPrefix4 and MaxPodPrefix6 are the widest pod CIDRs a VitalsCluster may claim (default 12
	// and 44: a /8 or a /40 is refused; tenancy.NoPodPrefixLimit: any).
	MaxPodPrefix4, MaxPodPrefix6 int
	// AccessInterval is how often each VitalsCluster's tenancy is proven again (default 1m); a spec
	// change proves it at once.
	AccessInterval time.Duration
	// CredentialsExpiryWarning is how long before a cluster's credentials expire its CredentialsHealthy
	// condition turns False (default 14 days).
	CredentialsExpiryWarning time.Duration
	// AccessWorkers is how many clusters the access controller proves at once (default 10): a proof
	// mostly waits on Keystone and Neutron, so one worker proves about interval/proof-duration clusters
	// (some 600 a minute at 0.1 s; docs/benchmarks.md, issue 17).
	AccessWorkers int

	// CheckInterval and CheckTimeout of the readiness checks (default 10s and 5s).
	CheckInterval, CheckTimeout time.Duration
	// QuotaCritical makes the quota headroom check fail readiness (default: degraded, reported only).
	QuotaCritical bool
	// QuotaInterval between two reads of the quota (default 1m).
	QuotaInterval time.Duration
	// MaxRoutes is Neutron's max_routes, the route limit per router the quota check compares with
	// (default 30).
	MaxRoutes int

	// ComponentDeadline: a controller whose queue holds ready requests that no worker has taken,
	// while none runs, for this long is stalled and fails liveness (default 2m).
	ComponentDeadline time.Duration
	// PassTimeout: a reconcile running longer is hung and fails liveness (default 5m).
	PassTimeout time.Duration

	// RouteGCInterval is the default interval for clusters that set none (default 1m).
	RouteGCInterval time.Duration
	// RouteGCBudget is the default cap on route removals per pass for clusters that set none (nil: 10;
	// 0: none).
	RouteGCBudget *int
	// RouteGCWorkers is how many clusters the route collector serves at once (default 10): a pass mostly
	// waits on OpenStack, so one worker keeps up with about interval/pass-duration clusters (see
	// docs/benchmarks.md).
	RouteGCWorkers int

	// FlightInterval is flight's default interval for clusters that set none (default 1m).
	FlightInterval time.Duration
	// FlightBudget is flight's default cap on changes per pass for clusters that set none (nil: 10;
	// 0: none).
	FlightBudget *int
	// FlightWorkers is how many clusters flight serves at once (default 10).
	FlightWorkers int

	// CloudHealWorkers is how many clusters cloudheal serves at once (default 4): a pass reads the cluster's
	// volumes and their attachments, and its servers only when a volume holds an attachment.
	CloudHealWorkers int

	// DeorbitWorkers is how many deleted clusters deorbit serves at once (default 4).
	DeorbitWorkers int
	// DeorbitParallelDeletes bounds the deletes and reads of one deleted cluster running at once
	// (default 8).
	DeorbitParallelDeletes int

	// CAPIEnrol runs the Cluster API enrolment (package controllers/enrol): Cluster API's Cluster and CAPO's
	// OpenStackCluster must be served by the API server. Off: Clusters are not read.
	CAPIEnrol bool
	// CAPIEnrolNamespaces selects the namespaces whose OpenStack Clusters are enrolled without the label
	// vitals.vitalsproject.io/enrol (nil: only the labelled ones).
	CAPIEnrolNamespaces labels.Selector
	// CAPIEnrolDeletionPolicy is the deletionPolicy of the VitalsClusters the enrolment makes ("": Deorbit; Orphan
	// enrols for health alone), unless a Cluster's label vitals.vitalsproject.io/deletion-policy says otherwise.
	CAPIEnrolDeletionPolicy v1alpha1.DeletionPolicy
	// CAPIRemediate runs Vitals as Cluster API's external remediation (package controllers/remediate): the
	// VitalsRemediations a MachineHealthCheck makes from a VitalsRemediationTemplate reboot their Machine's
	// server. Cluster API's Machine must be served by the API server. Off: Machines are not read.
	CAPIRemediate bool
	// RuntimeExtensionPort serves Cluster API's BeforeClusterDelete lifecycle hook on this port over TLS (a Runtime
	// Extension, clusterapi.NewExtensionServer: the deletion of a Cluster with a topology waits until deorbit has
	// released its VitalsCluster); 0: not served. It needs CAPIEnrol: the enrolment deletes the VitalsCluster the
	// hook waits for.
	RuntimeExtensionPort int
	// RuntimeExtensionCertDir holds the extension server's tls.crt and tls.key (reloaded when they change).
	RuntimeExtensionCertDir string

	// Remediation holds the operator-wide limits of the remediation policy: budget and window, storm
	// cool-down, pause, dry-run (nil: remediation.DefaultLimits()).
	Remediation *remediation.Limits
	// PauseConfigMap names the ConfigMap in the operator's namespace (LeaderElectionNamespace) that
	// pauses every controller at run time with paused: "true" (default "vitals-remediation").
	PauseConfigMap string

	// AllowLocalWorkload lets VitalsClusters without kubeconfigSecretRef use the cluster the operator
	// runs in as their workload cluster (default: they get WorkloadReachable=False, LocalNotAllowed).
	AllowLocalWorkload bool
	// AllowLoopbackWorkload accepts workload kubeconfigs whose server is on a loopback address: from
	// the operator, that is its own pod (or node, with host networking), never a tenant's cluster
	// (default: refused; for tests and single-host setups).
	AllowLoopbackWorkload bool
	// AllowInsecureWorkload accepts workload kubeconfigs with insecure-skip-tls-verify or an http://
	// server (default: refused).
	AllowInsecureWorkload bool
	// WorkloadQPS and WorkloadBurst limit the requests to each workload cluster (default 20 and 40).
	WorkloadQPS   float32
	WorkloadBurst int
	// WorkloadTeardownQPS and WorkloadTeardownBurst limit deorbit's requests to a deleted cluster's workload
	// cluster, a bucket of their own (default 20 and 300).
	WorkloadTeardownQPS   float32
	WorkloadTeardownBurst int
	// CloudQPS and CloudBurst limit the requests of each cloud connection, to all its services together:
	// the operator's own, and each cluster's with its own credentials (default DefaultCloudQPS and
	// DefaultCloudBurst).
	CloudQPS   float64
	CloudBurst int

	// KubernetesHealthMetricNames also exports the health checks under the kube-apiserver's own metric
	// names, kubernetes_healthcheck{,s_total} (default: only Vitals' vitals_health_*: a Prometheus that
	// scrapes the API servers too would mix the operator's checks into theirs).
	KubernetesHealthMetricNames bool
	// NoClusterMetrics turns off vitals_cluster_condition (default: on; see ClusterConditionMetric).
	NoClusterMetrics bool
	// PprofAddress serves Go's profiles (controller-runtime's pprof server) on this address ("": not served).
	PprofAddress string

	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Clock (default the real one).
	Clock clock.WithTicker
	// Registry receives the operator's metrics (default: a new registry; /metrics also serves
	// controller-runtime's global registry).
	Registry *prometheus.Registry
}

// Defaults of leader election: the leader's safety margin (LeaseDuration - RenewDeadline, 8s) exceeds
// the default write timeout (5s), and RetryPeriod (2s) leaves room for several renewals within it.
const (
	DefaultLeaseDuration = 20 * time.Second
	DefaultRenewDeadline = 12 * time.Second
)

// DefaultRouteGCWorkers is the default of Options.RouteGCWorkers.
const DefaultRouteGCWorkers = 10

// DefaultAccessWorkers is the default of Options.AccessWorkers.
const DefaultAccessWorkers = 10

// DefaultFlightWorkers is the default of Options.FlightWorkers.
const DefaultFlightWorkers = 10

// DefaultCloudHealWorkers is the default of Options.CloudHealWorkers.
const DefaultCloudHealWorkers = 4

// DefaultDeorbitWorkers and DefaultDeorbitParallelDeletes are the defaults of Options.DeorbitWorkers
// and Options.DeorbitParallelDeletes.
const (
	DefaultDeorbitWorkers         = 4
	DefaultDeorbitParallelDeletes = 8
)

// DefaultCloudQPS and DefaultCloudBurst are the defaults of Options.CloudQPS and Options.CloudBurst.
const (
	DefaultCloudQPS   = 10
	DefaultCloudBurst = 20
)

// DefaultKubeQPS and DefaultKubeBurst limit the operator's requests to its Kubernetes API server when
// RestConfig sets no limit of its own.
const (
	DefaultKubeQPS   = 100
	DefaultKubeBurst = 200
)

func (o *Options) defaults() {
	if o.HealthAddr == "" {
		o.HealthAddr = ":8082"
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = health.DefaultShutdownTimeout
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "vitals-operator"
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.CheckInterval == 0 {
		o.CheckInterval = 10 * time.Second
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = 5 * time.Second
	}
	if o.CheckTimeout > o.CheckInterval {
		o.CheckTimeout = o.CheckInterval
	}
	if o.QuotaInterval == 0 {
		o.QuotaInterval = time.Minute
	}
	if o.MaxRoutes == 0 {
		o.MaxRoutes = oschecks.DefaultMaxRoutes
	}
	if o.ComponentDeadline == 0 {
		o.ComponentDeadline = 2 * time.Minute
	}
	if o.PassTimeout == 0 {
		o.PassTimeout = 5 * time.Minute
	}
	if o.RouteGCWorkers <= 0 {
		o.RouteGCWorkers = DefaultRouteGCWorkers
	}
	if o.AccessWorkers <= 0 {
		o.AccessWorkers = DefaultAccessWorkers
	}
	if o.FlightWorkers <= 0 {
		o.FlightWorkers = DefaultFlightWorkers
	}
	if o.CloudHealWorkers <= 0 {
		o.CloudHealWorkers = DefaultCloudHealWorkers
	}
	if o.DeorbitWorkers <= 0 {
		o.DeorbitWorkers = DefaultDeorbitWorkers
	}
	if o.DeorbitParallelDeletes <= 0 {
		o.DeorbitParallelDeletes = DefaultDeorbitParallelDeletes
	}
	if o.PauseConfigMap == "" {
		o.PauseConfigMap = DefaultPauseConfigMap
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.CloudQPS <= 0 {
		o.CloudQPS = DefaultCloudQPS
	}
	if o.CloudBurst <= 0 {
		o.CloudBurst = max(1, int(2*o.CloudQPS))
	}
	if o.Connect == nil {
		o.Connect = DefaultConnect(o.Registry, o.Logger, o.CloudQPS, o.CloudBurst)
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = fencing.DefaultWriteTimeout
		if m, ok := o.safetyMargin(); ok && m > 0 {
			o.WriteTimeout = min(o.WriteTimeout, m/2)
		}
	}
}

// safetyMargin is the time between the end of this replica's fenced validity and the earliest moment
// another replica may act on the same cluster: the shard safety margin with sharding, LeaseDuration -
// RenewDeadline with leader election; ok is false with one replica (nobody else acts).
func (o *Options) safetyMargin() (time.Duration, bool) {
	switch {
	case o.Sharding != nil:
		m := o.Sharding.SafetyMargin
		if m == 0 {
			m = sharding.DefaultSafetyMargin
		}
		return m, true
	case o.LeaderElect:
		return o.LeaseDuration - o.RenewDeadline, true
	}
	return 0, false
}

// errExtensionWithoutEnrol refuses the Runtime Extension without the enrolment: the hook would wait for the
// deletion of VitalsClusters that no enrolment makes (an enrolment turned off leaves its VitalsClusters behind).
var errExtensionWithoutEnrol = &config.Error{Field: "--runtime-extension-port",
	Msg: "needs --capi-enrol: the BeforeClusterDelete hook waits for the enrolment to delete a Cluster's VitalsCluster (docs/operator.md, \"Cluster API enrolment\")"}

// checkFencing refuses timeouts that would let a write outlive the replica's right to send it: every
// write ends within WriteTimeout, which must be shorter than the safety margin; with leader election
// RetryPeriod < RenewDeadline < LeaseDuration (client-go renews every RetryPeriod and gives up at
// RenewDeadline). The sharding package checks its own rule (safety margin + renew interval < lease
// duration). The error is a *config.Error: the command exits with code 2.
func (o *Options) checkFencing() error {
	if o.WriteTimeout <= 0 {
		return &config.Error{Field: "--write-timeout", Msg: fmt.Sprintf("expected a positive duration such as 5s, got %s", o.WriteTimeout)}
	}
	if o.LeaderElect && o.Sharding == nil && (o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline || o.RenewDeadline >= o.LeaseDuration) {
		return &config.Error{Field: "leader election", Msg: fmt.Sprintf("expected 0 < retry period (%s) < renew deadline (%s) < lease duration (%s)",
			o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)}
	}
	m, ok := o.safetyMargin()
	if !ok || o.WriteTimeout < m {
		return nil
	}
	what := fmt.Sprintf("--shard-safety-margin (%s)", m)
	if o.Sharding == nil {
		what = fmt.Sprintf("the leader's safety margin, lease duration (%s) - renew deadline (%s) = %s", o.LeaseDuration, o.RenewDeadline, m)
	}
	return &config.Error{Field: "--write-timeout", Msg: fmt.Sprintf("expected a write timeout (%s) shorter than %s: a write allowed just before this replica's fenced validity ends must end before another replica may take its clusters over (docs/operator.md, \"Fencing\")",
		o.WriteTimeout, what)}
}
