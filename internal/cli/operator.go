package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/sharding"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// operatorFlags are the flags of `vitals operator`; each overrides the configuration file.
type operatorFlags struct {
	configFile              string
	kube                    kubeFlags
	namespace               string
	healthPort              int
	healthBind              string
	drainDelay              time.Duration
	metricsAddr             string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	cloud                   string
	routegcInterval         time.Duration
	routegcBudget           int
	routegcWorkers          int
	flightInterval          time.Duration
	flightBudget            int
	flightWorkers           int
	deorbitWorkers          int
	deorbitParallelDeletes  int
	capiEnrol               bool
	capiEnrolNamespaces     string
	capiEnrolPolicy         string
	capiRemediate           bool
	extensionPort           int
	extensionCertDir        string
	remediationBudget       int
	remediationWindow       time.Duration
	stormCooldown           time.Duration
	remediationPaused       bool
	dryRun                  bool
	pauseConfigMap          string
	checkInterval           time.Duration
	checkTimeout            time.Duration
	quotaCritical           bool
	maxRoutes               int
	allowLocalWorkload      bool
	allowInsecureWorkload   bool
	allowLoopbackWorkload   bool
	kubeAPIQPS              float32
	kubeAPIBurst            int
	workloadQPS             float32
	workloadBurst           int
	teardownQPS             float32
	teardownBurst           int
	cloudQPS                int
	cloudBurst              int
	trustNamespaces         []string
	trustedAuthURLs         []string
	podCIDRLimit4           int
	podCIDRLimit6           int
	accessInterval          time.Duration
	credentialsWarning      time.Duration
	accessWorkers           int
	sharding                bool
	shardRanges             int
	shardClientSide         bool
	shardLeaseDuration      time.Duration
	shardRenewInterval      time.Duration
	shardSafetyMargin       time.Duration
	writeTimeout            time.Duration
	kubernetesMetricNames   bool
	clusterMetrics          bool
	pprofAddress            string
	log                     *clirun.LogFlags
}

func newOperatorCommand() *cobra.Command {
	return operatorCommand(&operatorFlags{})
}

// operatorCommand builds the command with its flags bound to f.
func operatorCommand(f *operatorFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: the VitalsCluster controllers (access, routegc, flight, deorbit) with leader election or sharding and the controller health profile",
		Long: `Run the operator: a controller manager over VitalsCluster resources (vitals.vitalsproject.io/v1alpha1)
with leader election on a Lease, Events, Prometheus metrics on --metrics-bind-address, and the controller
health profile on --health-port: /readyz (/ready) = Kubernetes list+watch, informers synced, Keystone token,
Neutron answers; /livez (/alive) = every controller loop and informer beats, and a leader still holds its
Lease. Liveness never fails because OpenStack is down.

Configuration comes from --config, an oslo-style INI file as Kuryr's (flags override it):

  [kubernetes]
  # or api_root + token_file + ssl_ca_crt_file; empty: in-cluster
  kubeconfig = /etc/vitals/kubeconfig
  # watch one namespace; empty: all
  namespace =

  # or [keystone_authtoken]: the operator's OpenStack credentials
  [neutron]
  auth_type = password
  auth_url = https://keystone.example:5000/v3
  username = vitals
  password = secret
  project_name = k8s
  user_domain_name = Default
  project_domain_name = Default

  [health_server]
  port = 8082
  # seconds; on SIGTERM readiness fails, liveness holds this long
  drain_delay = 5

  [operator]
  metrics_bind_address = :8080
  leader_elect = true
  leader_election_namespace = vitals-system
  # seconds; the default for Clusters that set none
  routegc_interval = 60
  # route removals per pass; 0: none
  routegc_budget = 10
  # clusters served at once (a pass mostly waits on OpenStack)
  routegc_workers = 10
  # seconds; the default for Clusters that set none
  flight_interval = 60
  # flight's changes per pass; 0: none
  flight_budget = 10
  # clusters flight serves at once
  flight_workers = 10
  # deleted clusters deorbit serves at once
  deorbit_workers = 4
  # deletes and reads of one deleted cluster at once
  deorbit_parallel_deletes = 8
  # destructive actions over all clusters per window; 0: none
  remediation_budget = 100
  # seconds
  remediation_window = 3600
  # seconds
  remediation_storm_cooldown = 600
  remediation_paused = false
  dry_run = false
  pause_configmap = vitals-remediation
  check_interval = 10
  check_timeout = 5
  # quota headroom fails readiness (default: reported only)
  quota_critical = false
  # Neutron's max_routes, for the quota check
  max_routes = 30
  # VitalsClusters without kubeconfigSecretRef: this cluster
  allow_local_workload = false
  allow_insecure_workload = false
  # tenants' kubeconfigs may name a loopback server
  allow_loopback_workload = false
  # to the operator's own API server (about 2 x clusters / access interval + 30: two Secret reads per cluster)
  kube_api_qps = 100
  kube_api_burst = 200
  # per workload cluster
  workload_qps = 20
  workload_burst = 40
  # per cloud connection (the operator's own, each cluster's credentials'), all services together
  cloud_qps = 10
  cloud_burst = 20
  # may use the operator's credentials; default: none
  trust_namespaces = infra
  # Keystone URLs trusted for credentials Secrets
  trusted_auth_urls =
  pod_cidr_limit_v4 = 12
  pod_cidr_limit_v6 = 44
  access_interval = 60
  access_workers = 10
  # days before a cluster's credentials expire that CredentialsHealthy turns False
  credentials_expiry_warning_days = 14
  # every replica active, on the clusters of its UID hash ranges
  sharding = false
  # a power of two, the same on every replica
  shard_ranges = 16
  # filter by hash only (API servers without ShardedListAndWatch)
  shard_client_side = false
  # seconds
  shard_lease_duration = 20
  shard_renew_interval = 5
  # a replica stops acting this long before its range Lease could expire
  shard_safety_margin = 8
  # seconds: every write ends within it, shorter than the safety margin (0: 5, or half the margin)
  write_timeout = 5
  # also export the health checks as kubernetes_healthcheck{,s_total} (the kube-apiserver's names)
  kubernetes_metric_names = false
  # vitals_cluster_condition{vitalscluster,type,status}: 3 series per condition per cluster
  cluster_metrics = true

With --sharding (the chart sets it when replicas > 1) there is no leader: every replica holds Leases of
hash ranges of the VitalsClusters' UIDs, sees and acts on the clusters of its ranges only, and spends its
share of --remediation-budget (docs/operator.md, "Sharding").

Every destructive action asks the remediation policy first (docs/operator.md, "Remediation policy"):
--remediation-budget actions per --remediation-window over all clusters (0: none), --dry-run,
--remediation-paused, and at run time the ConfigMap --pause-configmap in the operator's namespace with
paused: "true".

Without an auth section, the credentials come from --cloud (clouds.yaml) or OS_CLOUD, else from OS_*
variables. A VitalsCluster acts with the credentials of its own Secret; the operator's serve only the
VitalsClusters of the namespaces given with --trust-namespace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := f.options(cmd.Flags(), cmd.ErrOrStderr(), os.Getenv)
			if err != nil {
				return err
			}
			ctrllog.SetLogger(logr.FromSlogHandler(opts.Logger.Handler()))
			op, err := operator.New(opts)
			if err != nil {
				return err
			}
			return op.Start(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.configFile, "config", "", "oslo-style INI configuration file ([kubernetes], [neutron]/[keystone_authtoken], [health_server], [operator])")
	addKubeFlags(cmd, &f.kube, "the cluster holding the VitalsCluster resources", "[kubernetes] kubeconfig, in-cluster, then KUBECONFIG")
	fl.StringVar(&f.namespace, "namespace", "", "watch Clusters in this namespace only (default: all)")
	fl.IntVar(&f.healthPort, "health-port", 8082, "port of the health server (/livez, /readyz, /alive, /ready)")
	fl.StringVar(&f.healthBind, "health-bind-address", "", "address the health server binds to (default: all)")
	fl.DurationVar(&f.drainDelay, "drain-delay", 0, "on SIGTERM, fail readiness and keep liveness passing this long before stopping")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics server (\"0\": off)")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader on a Lease; other replicas stand by")
	fl.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the pod's, else default)")
	fl.StringVar(&f.leaderElectionID, "leader-election-id", "vitals-operator", "name of the Lease")
	addCloudFlag(cmd, &f.cloud, "cloud of clouds.yaml holding the operator's OpenStack credentials (default: OS_CLOUD, else OS_* variables)")
	fl.DurationVar(&f.routegcInterval, "routegc-interval", v1alpha1.DefaultInterval, "route collector interval for Clusters that set none")
	fl.IntVar(&f.routegcBudget, "routegc-budget", v1alpha1.DefaultBudget, "route removals per pass for clusters that set none (0: none)")
	fl.IntVar(&f.routegcWorkers, "routegc-workers", operator.DefaultRouteGCWorkers, "how many clusters the route collector serves at once")
	fl.DurationVar(&f.flightInterval, "flight-interval", v1alpha1.DefaultInterval, "flight's interval for Clusters that set none")
	fl.IntVar(&f.flightBudget, "flight-budget", v1alpha1.DefaultBudget, "flight's changes per pass for clusters that set none (0: none)")
	fl.IntVar(&f.flightWorkers, "flight-workers", operator.DefaultFlightWorkers, "how many clusters flight serves at once")
	fl.IntVar(&f.deorbitWorkers, "deorbit-workers", operator.DefaultDeorbitWorkers, "how many deleted clusters deorbit serves at once")
	fl.IntVar(&f.deorbitParallelDeletes, "deorbit-parallel-deletes", operator.DefaultDeorbitParallelDeletes, "deletes and reads of one deleted cluster running at once")
	fl.BoolVar(&f.capiEnrol, "capi-enrol", false, "enrol Cluster API Clusters on CAPO's OpenStackClusters that opt in (label vitals.vitalsproject.io/enrol=true, or --capi-enrol-namespaces): create and own their VitalsClusters")
	fl.BoolVar(&f.capiRemediate, "capi-remediate", false, "act as Cluster API's external remediation: reboot the servers of the Machines whose MachineHealthCheck made a VitalsRemediation (soft, then hard, then hand the Machine back to its MachineSet or control plane for replacement)")
	fl.IntVar(&f.extensionPort, "runtime-extension-port", 0, "serve Cluster API's BeforeClusterDelete lifecycle hook (a Runtime Extension) over TLS on this port, so that the deletion of a Cluster with a topology waits for deorbit (needs --capi-enrol; 0: not served)")
	fl.StringVar(&f.extensionCertDir, "runtime-extension-cert-dir", "", "directory of the runtime extension's tls.crt and tls.key (needs --runtime-extension-port)")
	fl.StringVar(&f.capiEnrolPolicy, "capi-enrol-deletion-policy", string(v1alpha1.DeletionPolicyDeorbit), "deletionPolicy of the VitalsClusters the enrolment makes: Deorbit (their deletion cleans the cloud up after the cluster) or Orphan (enrolled for health alone); a Cluster's label vitals.vitalsproject.io/deletion-policy wins (needs --capi-enrol)")
	fl.StringVar(&f.capiEnrolNamespaces, "capi-enrol-namespaces", "", "label selector of the namespaces whose OpenStack Clusters are enrolled without the label (needs --capi-enrol; default: none)")
	fl.IntVar(&f.remediationBudget, "remediation-budget", remediation.DefaultOperatorActions, "destructive actions of all controllers over all clusters per --remediation-window (0: none)")
	fl.DurationVar(&f.remediationWindow, "remediation-window", remediation.DefaultOperatorWindow, "sliding window of --remediation-budget")
	fl.DurationVar(&f.stormCooldown, "remediation-storm-cooldown", remediation.DefaultStormCooldown, "how long a cluster's actions stay held after its storm rule last tripped (0: none)")
	fl.BoolVar(&f.remediationPaused, "remediation-paused", false, "hold every destructive action of every controller (detection and reports go on)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "every controller reports what it would do and changes nothing")
	fl.StringVar(&f.pauseConfigMap, "pause-configmap", operator.DefaultPauseConfigMap, "ConfigMap in the operator's namespace whose paused: \"true\" pauses every controller at run time")
	fl.DurationVar(&f.checkInterval, "check-interval", 10*time.Second, "interval of the readiness checks")
	fl.DurationVar(&f.checkTimeout, "check-timeout", 5*time.Second, "timeout of each readiness check")
	fl.BoolVar(&f.quotaCritical, "quota-critical", false, "quota headroom (ports, subnets, networks, security groups, routes) fails readiness instead of being reported only")
	fl.IntVar(&f.maxRoutes, "max-routes", 30, "Neutron's max_routes: the routes per router the quota check compares with")
	fl.BoolVar(&f.allowLocalWorkload, "allow-local-workload", false, "VitalsClusters without spec.kubeconfigSecretRef use the cluster the operator runs in as their workload cluster")
	fl.BoolVar(&f.allowInsecureWorkload, "allow-insecure-workload", false, "accept workload kubeconfigs with insecure-skip-tls-verify or an http:// server")
	fl.BoolVar(&f.allowLoopbackWorkload, "allow-loopback-workload", false, "accept workload kubeconfigs whose server is on a loopback address (the operator's own host: for tests and single-host setups)")
	fl.Float32Var(&f.kubeAPIQPS, "kube-api-qps", operator.DefaultKubeQPS, "requests per second to the operator's own API server (its VitalsClusters' status, Events, Secrets, leases)")
	fl.IntVar(&f.kubeAPIBurst, "kube-api-burst", operator.DefaultKubeBurst, "request burst to the operator's own API server")
	fl.Float32Var(&f.workloadQPS, "workload-qps", 20, "requests per second to each workload cluster")
	fl.IntVar(&f.workloadBurst, "workload-burst", 40, "request burst to each workload cluster")
	fl.Float32Var(&f.teardownQPS, "workload-teardown-qps", workload.DefaultTeardownQPS, "requests per second of deorbit to the workload cluster of a deleted cluster (a bucket of its own)")
	fl.IntVar(&f.teardownBurst, "workload-teardown-burst", workload.DefaultTeardownBurst, "request burst of deorbit to the workload cluster of a deleted cluster")
	fl.IntVar(&f.cloudQPS, "cloud-qps", operator.DefaultCloudQPS, "requests per second of each cloud connection (the operator's own, each cluster's credentials'), to all its services together")
	fl.IntVar(&f.cloudBurst, "cloud-burst", operator.DefaultCloudBurst, "request burst of each cloud connection")
	fl.StringArrayVar(&f.trustNamespaces, "trust-namespace", nil, "namespace whose VitalsClusters may use the operator's own OpenStack credentials (repeatable; default: none)")
	fl.StringArrayVar(&f.trustedAuthURLs, "trusted-auth-url", nil, "Keystone URL prefix whose catalog is trusted for credentials Secrets, e.g. https://keystone.example:5000/v3 (repeatable; the operator's own is always trusted)")
	fl.IntVar(&f.podCIDRLimit4, "pod-cidr-limit-v4", 12, "shortest prefix length of an IPv4 pod CIDR a VitalsCluster may claim (12: a /11 is refused; 0: no limit)")
	fl.IntVar(&f.podCIDRLimit6, "pod-cidr-limit-v6", 44, "shortest prefix length of an IPv6 pod CIDR a VitalsCluster may claim (44: a /43 is refused; 0: no limit)")
	fl.DurationVar(&f.accessInterval, "access-interval", time.Minute, "how often each VitalsCluster's credentials and resources are proven again")
	fl.DurationVar(&f.credentialsWarning, "credentials-expiry-warning", access.DefaultExpiryWarning, "how long before a VitalsCluster's OpenStack credentials expire its CredentialsHealthy condition turns False")
	fl.IntVar(&f.accessWorkers, "access-workers", operator.DefaultAccessWorkers, "how many clusters the access controller proves at once")
	fl.BoolVar(&f.sharding, "sharding", false, "every replica acts, on the VitalsClusters of the UID hash ranges it holds through Leases (no leader election)")
	fl.IntVar(&f.shardRanges, "shard-ranges", sharding.DefaultRanges, "hash ranges the VitalsClusters' UIDs are cut into: a power of two, the same on every replica")
	fl.BoolVar(&f.shardClientSide, "shard-client-side", false, "list and watch every VitalsCluster and filter by hash (default: also ask the API server for the held ranges, feature gate ShardedListAndWatch)")
	fl.DurationVar(&f.shardLeaseDuration, "shard-lease-duration", sharding.DefaultLeaseDuration, "a shard range Lease not renewed for this long may be taken over")
	fl.DurationVar(&f.shardRenewInterval, "shard-renew-interval", sharding.DefaultRenewInterval, "interval of the shard rounds (renewals, membership, assignment)")
	fl.DurationVar(&f.shardSafetyMargin, "shard-safety-margin", sharding.DefaultSafetyMargin, "a replica stops acting on a range this long before its Lease could expire; more than --write-timeout")
	fl.DurationVar(&f.writeTimeout, "write-timeout", 0, "every cloud and Kubernetes write ends within this and within the replica's fenced validity; shorter than the safety margin (0: 5s, at most half the margin)")
	fl.BoolVar(&f.kubernetesMetricNames, "kubernetes-metric-names", false, "also export the health checks under the kube-apiserver's metric names kubernetes_healthcheck{,s_total} (default: vitals_health_* only)")
	fl.StringVar(&f.pprofAddress, "pprof-bind-address", "", "serve Go's profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060 (default: not served; never expose it beyond the host)")
	fl.BoolVar(&f.clusterMetrics, "cluster-metrics", true, "export vitals_cluster_condition{vitalscluster,type,status} from the cache at each scrape (3 series per condition per cluster)")
	f.log = clirun.AddLogFlags(cmd, "text")
	clirun.CompleteFiles(cmd, "config", "conf", "ini")
	clirun.CompleteDirs(cmd, "runtime-extension-cert-dir")
	clirun.CompleteValues(cmd, "capi-enrol-deletion-policy", string(v1alpha1.DeletionPolicyDeorbit), string(v1alpha1.DeletionPolicyOrphan))
	return cmd
}

// options merges the configuration file and the flags (flags win when given, clirun.FlagsOverFile).
func (f *operatorFlags) options(fl *pflag.FlagSet, stderr io.Writer, getenv func(string) string) (operator.Options, error) {
	var o operator.Options
	log, err := f.log.Logger(stderr)
	if err != nil {
		return o, err
	}
	o.Logger = log
	var (
		ini                        *config.INI
		apiRoot, tokenFile, caFile string
		ignored                    []string
	)
	if f.configFile != "" {
		err := clirun.FlagsOverFile(fl, func() error {
			var err error
			if ini, err = config.LoadINI(f.configFile); err != nil {
				return err
			}
			apiRoot, tokenFile, caFile, ignored = f.fromINI(ini)
			return ini.Err()
		})
		if err != nil {
			return o, err
		}
	}
	if len(ignored) > 0 {
		// A kuryr.conf holds many options of Kuryr's own: one line says which ones the operator skips.
		log.Warn("configuration options the operator does not use: ignored", "file", f.configFile, "options", ignored)
	}
	if f.healthPort < 0 || f.healthPort > 65535 {
		return o, &config.Error{Field: "--health-port", Msg: fmt.Sprintf("expected a port number (0-65535), got %d", f.healthPort)}
	}
	if f.drainDelay < 0 {
		return o, &config.Error{Field: "--drain-delay", Msg: fmt.Sprintf("expected 0 or a positive duration, got %s", f.drainDelay)}
	}
	if f.checkInterval <= 0 || f.checkTimeout <= 0 {
		return o, &config.Error{Field: "--check-interval/--check-timeout", Msg: "expected positive durations"}
	}
	if f.kubeAPIQPS <= 0 || f.kubeAPIBurst <= 0 {
		return o, &config.Error{Field: "--kube-api-qps/--kube-api-burst", Msg: fmt.Sprintf("expected positive numbers, got %g and %d", f.kubeAPIQPS, f.kubeAPIBurst)}
	}
	if f.workloadQPS <= 0 || f.workloadBurst <= 0 {
		return o, &config.Error{Field: "--workload-qps/--workload-burst", Msg: fmt.Sprintf("expected positive numbers, got %g and %d", f.workloadQPS, f.workloadBurst)}
	}
	if f.teardownQPS <= 0 || f.teardownBurst <= 0 {
		return o, &config.Error{Field: "--workload-teardown-qps/--workload-teardown-burst", Msg: fmt.Sprintf("expected positive numbers, got %g and %d", f.teardownQPS, f.teardownBurst)}
	}
	if f.cloudQPS < 1 || f.cloudQPS > 10000 || f.cloudBurst < 1 || f.cloudBurst > 10000 {
		return o, &config.Error{Field: "--cloud-qps/--cloud-burst", Msg: fmt.Sprintf("expected 1 to 10000, got %d and %d", f.cloudQPS, f.cloudBurst)}
	}
	if f.routegcInterval < time.Second {
		return o, &config.Error{Field: "--routegc-interval", Msg: fmt.Sprintf("expected at least 1s, got %s", f.routegcInterval)}
	}
	if f.routegcBudget < 0 || f.routegcBudget > 1000 {
		return o, &config.Error{Field: "--routegc-budget", Msg: fmt.Sprintf("expected 0 (no removals) to 1000, got %d", f.routegcBudget)}
	}
	if f.routegcWorkers < 1 || f.routegcWorkers > 100 {
		return o, &config.Error{Field: "--routegc-workers", Msg: fmt.Sprintf("expected 1 to 100, got %d", f.routegcWorkers)}
	}
	if f.flightInterval < time.Second {
		return o, &config.Error{Field: "--flight-interval", Msg: fmt.Sprintf("expected at least 1s, got %s", f.flightInterval)}
	}
	if f.flightBudget < 0 || f.flightBudget > 1000 {
		return o, &config.Error{Field: "--flight-budget", Msg: fmt.Sprintf("expected 0 (no changes) to 1000, got %d", f.flightBudget)}
	}
	if f.flightWorkers < 1 || f.flightWorkers > 100 {
		return o, &config.Error{Field: "--flight-workers", Msg: fmt.Sprintf("expected 1 to 100, got %d", f.flightWorkers)}
	}
	if f.accessWorkers < 1 || f.accessWorkers > 100 {
		return o, &config.Error{Field: "--access-workers", Msg: fmt.Sprintf("expected 1 to 100, got %d", f.accessWorkers)}
	}
	if f.deorbitWorkers < 1 || f.deorbitWorkers > 100 {
		return o, &config.Error{Field: "--deorbit-workers", Msg: fmt.Sprintf("expected 1 to 100, got %d", f.deorbitWorkers)}
	}
	if f.deorbitParallelDeletes < 1 || f.deorbitParallelDeletes > 100 {
		return o, &config.Error{Field: "--deorbit-parallel-deletes", Msg: fmt.Sprintf("expected 1 to 100, got %d", f.deorbitParallelDeletes)}
	}
	switch {
	case f.remediationBudget < 0 || f.remediationBudget > 1000000:
		return o, &config.Error{Field: "--remediation-budget", Msg: fmt.Sprintf("expected 0 (no actions) to 1000000, got %d", f.remediationBudget)}
	case f.remediationWindow <= 0:
		return o, &config.Error{Field: "--remediation-window", Msg: fmt.Sprintf("expected a positive duration such as 1h, got %s", f.remediationWindow)}
	case f.stormCooldown < 0:
		return o, &config.Error{Field: "--remediation-storm-cooldown", Msg: fmt.Sprintf("expected a duration of 0 or more such as 10m, got %s", f.stormCooldown)}
	case f.pauseConfigMap == "":
		return o, &config.Error{Field: "--pause-configmap", Msg: "expected the name of a ConfigMap, got an empty one"}
	}
	if err := f.checkTenancy(); err != nil {
		return o, err
	}
	if err := f.checkSharding(fl); err != nil {
		return o, err
	}
	o.HealthAddr = net.JoinHostPort(f.healthBind, strconv.Itoa(f.healthPort))
	o.DrainDelay = f.drainDelay
	o.MetricsAddr = f.metricsAddr
	o.LeaderElect, o.LeaderElectionNamespace, o.LeaderElectionID = f.leaderElect, f.leaderElectionNamespace, f.leaderElectionID
	if f.writeTimeout < 0 {
		return o, &config.Error{Field: "--write-timeout", Msg: fmt.Sprintf("expected a positive duration such as 5s (0: the default), got %s", f.writeTimeout)}
	}
	o.WriteTimeout = f.writeTimeout
	o.KubernetesHealthMetricNames, o.NoClusterMetrics = f.kubernetesMetricNames, !f.clusterMetrics
	o.PprofAddress = f.pprofAddress
	routegcBudget := f.routegcBudget
	o.RouteGCInterval, o.RouteGCBudget, o.RouteGCWorkers = f.routegcInterval, &routegcBudget, f.routegcWorkers
	flightBudget := f.flightBudget
	o.FlightInterval, o.FlightBudget, o.FlightWorkers = f.flightInterval, &flightBudget, f.flightWorkers
	o.DeorbitWorkers, o.DeorbitParallelDeletes = f.deorbitWorkers, f.deorbitParallelDeletes
	if f.capiEnrolNamespaces != "" {
		if !f.capiEnrol {
			return o, &config.Error{Field: "--capi-enrol-namespaces", Msg: "needs --capi-enrol"}
		}
		sel, err := labels.Parse(f.capiEnrolNamespaces)
		if err != nil {
			return o, &config.Error{Field: "--capi-enrol-namespaces", Msg: fmt.Sprintf("expected a label selector such as vitals.vitalsproject.io/enrol=true: %v", err)}
		}
		o.CAPIEnrolNamespaces = sel
	}
	switch p := v1alpha1.DeletionPolicy(f.capiEnrolPolicy); {
	case p != v1alpha1.DeletionPolicyDeorbit && p != v1alpha1.DeletionPolicyOrphan:
		return o, &config.Error{Field: "--capi-enrol-deletion-policy", Msg: fmt.Sprintf("expected %s or %s, got %q", v1alpha1.DeletionPolicyDeorbit, v1alpha1.DeletionPolicyOrphan, f.capiEnrolPolicy)}
	case fl.Changed("capi-enrol-deletion-policy") && !f.capiEnrol:
		return o, &config.Error{Field: "--capi-enrol-deletion-policy", Msg: "needs --capi-enrol"}
	default:
		o.CAPIEnrolDeletionPolicy = p
	}
	o.CAPIEnrol, o.CAPIRemediate = f.capiEnrol, f.capiRemediate
	if err := f.checkExtension(); err != nil {
		return o, err
	}
	if f.extensionPort != 0 && !f.capiEnrol {
		return o, &config.Error{Field: "--runtime-extension-port", Msg: "needs --capi-enrol: the BeforeClusterDelete hook waits for the enrolment to delete a Cluster's VitalsCluster (docs/operator.md, \"Cluster API enrolment\")"}
	}
	o.RuntimeExtensionPort, o.RuntimeExtensionCertDir = f.extensionPort, f.extensionCertDir
	o.Remediation = &remediation.Limits{Actions: f.remediationBudget, Window: f.remediationWindow, StormCooldown: f.stormCooldown,
		Paused: f.remediationPaused, DryRun: f.dryRun}
	o.PauseConfigMap = f.pauseConfigMap
	o.CheckInterval, o.CheckTimeout = f.checkInterval, f.checkTimeout
	o.QuotaCritical, o.MaxRoutes = f.quotaCritical, f.maxRoutes
	o.AllowLocalWorkload, o.AllowInsecureWorkload = f.allowLocalWorkload, f.allowInsecureWorkload
	o.AllowLoopbackWorkload = f.allowLoopbackWorkload
	o.WorkloadQPS, o.WorkloadBurst = f.workloadQPS, f.workloadBurst
	o.WorkloadTeardownQPS, o.WorkloadTeardownBurst = f.teardownQPS, f.teardownBurst
	o.CloudQPS, o.CloudBurst = float64(f.cloudQPS), f.cloudBurst
	o.TrustedNamespaces, o.TrustedAuthURLs = f.trustNamespaces, f.trustedAuthURLs
	o.MaxPodPrefix4, o.MaxPodPrefix6 = podPrefixLimit(f.podCIDRLimit4), podPrefixLimit(f.podCIDRLimit6)
	o.AccessInterval, o.AccessWorkers = f.accessInterval, f.accessWorkers
	o.CredentialsExpiryWarning = f.credentialsWarning
	if f.sharding {
		o.LeaderElect = false
		o.Sharding = &operator.Sharding{Ranges: f.shardRanges, ClientSide: f.shardClientSide,
			LeaseDuration: f.shardLeaseDuration, RenewInterval: f.shardRenewInterval, SafetyMargin: f.shardSafetyMargin}
	}
	switch a, err := openstack.PickAuth(openstack.AuthSources{INI: ini, Cloud: f.cloud, Getenv: getenv}); {
	case err == nil:
		o.Cloud = &a
	case !errors.Is(err, openstack.ErrNoCredentials):
		return o, err
	}
	rc, err := restConfig(f.kube, apiRoot, tokenFile, caFile)
	if err != nil {
		return o, err
	}
	rc.QPS, rc.Burst = f.kubeAPIQPS, f.kubeAPIBurst
	o.RestConfig, o.Namespace = rc, f.namespace
	if o.Cloud == nil {
		o.Logger.Warn("no OpenStack credentials for the operator: only Clusters with a credentials Secret are served, and readiness has no Keystone or Neutron check")
	}
	return o, nil
}

// operatorINISections are the sections of the configuration file the operator reads: its own, Kuryr's
// [kubernetes] and [health_server], and the auth sections of PickAuth.
func operatorINISections() []string {
	return append([]string{"operator", "kubernetes", "health_server"}, openstack.DefaultINISections...)
}

// fromINI reads the operator's options of the configuration file into the flags' variables (the
// auth section is PickAuth's) and returns Kuryr's api_root, token_file and ssl_ca_crt_file, and what
// the operator ignores: the options of [kubernetes] it does not use (Kuryr's own: the file may be a
// kuryr.conf), as "kubernetes.option", and the sections of Kuryr and oslo it does not read, as "[section]".
// Unknown options of [operator] and [health_server] are errors (typos), and so is any other section
// (config.INI.CheckSections: [operater] is an error that names [operator]).
func (f *operatorFlags) fromINI(ini *config.INI) (apiRoot, tokenFile, caFile string, ignored []string) {
	k := ini.Section("kubernetes")
	for _, key := range k.Unknown("kubeconfig", "api_root", "token_file", "ssl_ca_crt_file", "namespace") {
		ignored = append(ignored, "kubernetes."+key)
	}
	f.kube.kubeconfig = k.String("kubeconfig", f.kube.kubeconfig)
	f.namespace = k.String("namespace", f.namespace)
	if v := k.String("api_root", ""); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			k.Errorf("api_root", "expected the URL of the Kubernetes API, such as https://10.0.0.1:6443, got %q", v)
		}
	}
	hs := ini.Section("health_server")
	hs.CheckKnown("port", "drain_delay") // Kuryr's controller has port only
	// Kuryr's and oslo's sections are ignored (one warning); any other section the operator does not read is an
	// error, and so is one that looks like a misspelt section of its own ([operater]).
	ignored = append(ignored, ini.CheckSections(operatorINISections(), config.KuryrSections)...)
	f.healthPort = hs.Port("port", f.healthPort)
	f.drainDelay = hs.Seconds("drain_delay", f.drainDelay)
	op := ini.Section("operator")
	op.CheckKnown("metrics_bind_address", "leader_elect", "leader_election_namespace", "leader_election_id",
		"routegc_interval", "routegc_budget", "routegc_workers", "flight_interval", "flight_budget", "flight_workers", "deorbit_workers", "deorbit_parallel_deletes", "check_interval", "check_timeout", "quota_critical", "max_routes", "cloud",
		"allow_local_workload", "allow_insecure_workload", "allow_loopback_workload", "kube_api_qps", "kube_api_burst", "workload_qps", "workload_burst", "workload_teardown_qps", "workload_teardown_burst", "cloud_qps", "cloud_burst",
		"remediation_budget", "remediation_window", "remediation_storm_cooldown", "remediation_paused", "dry_run", "pause_configmap",
		"trust_namespaces", "trusted_auth_urls", "pod_cidr_limit_v4", "pod_cidr_limit_v6", "access_interval", "access_workers", "credentials_expiry_warning_days",
		"sharding", "shard_ranges", "shard_client_side", "shard_lease_duration", "shard_renew_interval", "shard_safety_margin", "write_timeout",
		"kubernetes_metric_names", "cluster_metrics")
	f.metricsAddr = op.String("metrics_bind_address", f.metricsAddr)
	f.leaderElect = op.Bool("leader_elect", f.leaderElect)
	f.leaderElectionNamespace = op.String("leader_election_namespace", f.leaderElectionNamespace)
	f.leaderElectionID = op.String("leader_election_id", f.leaderElectionID)
	f.routegcInterval = op.Seconds("routegc_interval", f.routegcInterval)
	f.routegcBudget = op.IntRange("routegc_budget", f.routegcBudget, 0, 1000)
	f.routegcWorkers = op.IntRange("routegc_workers", f.routegcWorkers, 1, 100)
	f.flightInterval = op.Seconds("flight_interval", f.flightInterval)
	f.flightBudget = op.IntRange("flight_budget", f.flightBudget, 0, 1000)
	f.flightWorkers = op.IntRange("flight_workers", f.flightWorkers, 1, 100)
	f.deorbitWorkers = op.IntRange("deorbit_workers", f.deorbitWorkers, 1, 100)
	f.deorbitParallelDeletes = op.IntRange("deorbit_parallel_deletes", f.deorbitParallelDeletes, 1, 100)
	f.remediationBudget = op.IntRange("remediation_budget", f.remediationBudget, 0, 1000000)
	f.remediationWindow = op.Seconds("remediation_window", f.remediationWindow)
	f.stormCooldown = op.Seconds("remediation_storm_cooldown", f.stormCooldown)
	f.remediationPaused = op.Bool("remediation_paused", f.remediationPaused)
	f.dryRun = op.Bool("dry_run", f.dryRun)
	f.pauseConfigMap = op.String("pause_configmap", f.pauseConfigMap)
	f.checkInterval = op.Seconds("check_interval", f.checkInterval)
	f.checkTimeout = op.Seconds("check_timeout", f.checkTimeout)
	f.quotaCritical = op.Bool("quota_critical", f.quotaCritical)
	f.maxRoutes = op.IntRange("max_routes", f.maxRoutes, 1, 10000)
	f.cloud = op.String("cloud", f.cloud)
	f.allowLocalWorkload = op.Bool("allow_local_workload", f.allowLocalWorkload)
	f.allowInsecureWorkload = op.Bool("allow_insecure_workload", f.allowInsecureWorkload)
	f.allowLoopbackWorkload = op.Bool("allow_loopback_workload", f.allowLoopbackWorkload)
	f.kubeAPIQPS = float32(op.IntRange("kube_api_qps", int(f.kubeAPIQPS), 1, 10000))
	f.kubeAPIBurst = op.IntRange("kube_api_burst", f.kubeAPIBurst, 1, 10000)
	f.workloadQPS = float32(op.IntRange("workload_qps", int(f.workloadQPS), 1, 10000))
	f.workloadBurst = op.IntRange("workload_burst", f.workloadBurst, 1, 10000)
	f.teardownQPS = float32(op.IntRange("workload_teardown_qps", int(f.teardownQPS), 1, 10000))
	f.teardownBurst = op.IntRange("workload_teardown_burst", f.teardownBurst, 1, 10000)
	f.cloudQPS = op.IntRange("cloud_qps", f.cloudQPS, 1, 10000)
	f.cloudBurst = op.IntRange("cloud_burst", f.cloudBurst, 1, 10000)
	f.trustNamespaces = op.List("trust_namespaces", f.trustNamespaces)
	f.trustedAuthURLs = op.List("trusted_auth_urls", f.trustedAuthURLs)
	f.podCIDRLimit4 = op.IntRange("pod_cidr_limit_v4", f.podCIDRLimit4, 0, 32)
	f.podCIDRLimit6 = op.IntRange("pod_cidr_limit_v6", f.podCIDRLimit6, 0, 128)
	f.accessInterval = op.Seconds("access_interval", f.accessInterval)
	f.accessWorkers = op.IntRange("access_workers", f.accessWorkers, 1, 100)
	if op.Has("credentials_expiry_warning_days") {
		f.credentialsWarning = time.Duration(op.IntRange("credentials_expiry_warning_days", 14, 1, 365)) * 24 * time.Hour
	}
	f.sharding = op.Bool("sharding", f.sharding)
	f.shardRanges = op.IntRange("shard_ranges", f.shardRanges, 1, sharding.MaxRanges)
	f.shardClientSide = op.Bool("shard_client_side", f.shardClientSide)
	f.shardLeaseDuration = op.Seconds("shard_lease_duration", f.shardLeaseDuration)
	f.shardRenewInterval = op.Seconds("shard_renew_interval", f.shardRenewInterval)
	f.shardSafetyMargin = op.Seconds("shard_safety_margin", f.shardSafetyMargin)
	f.writeTimeout = op.Seconds("write_timeout", f.writeTimeout)
	f.kubernetesMetricNames = op.Bool("kubernetes_metric_names", f.kubernetesMetricNames)
	f.clusterMetrics = op.Bool("cluster_metrics", f.clusterMetrics)
	return k.String("api_root", ""), k.String("token_file", ""), k.String("ssl_ca_crt_file", ""), ignored
}

// checkSharding validates the sharding settings: --sharding turns leader election off, unless it was
// asked for explicitly (they exclude each other).
func (f *operatorFlags) checkSharding(fl *pflag.FlagSet) error {
	if !f.sharding {
		return nil
	}
	if f.leaderElect && fl.Changed("leader-elect") {
		return &config.Error{Field: "--sharding", Msg: "excludes --leader-elect=true: with sharding every replica is active, on its own clusters"}
	}
	if _, err := sharding.NewSpace(f.shardRanges); err != nil {
		return &config.Error{Field: "--shard-ranges", Msg: fmt.Sprintf("expected a power of two from 1 to %d, got %d", sharding.MaxRanges, f.shardRanges)}
	}
	if f.shardRenewInterval <= 0 || f.shardSafetyMargin <= 0 || f.shardSafetyMargin+f.shardRenewInterval >= f.shardLeaseDuration {
		return &config.Error{Field: "--shard-lease-duration", Msg: fmt.Sprintf("expected --shard-safety-margin (%s) + --shard-renew-interval (%s) < --shard-lease-duration (%s), all positive",
			f.shardSafetyMargin, f.shardRenewInterval, f.shardLeaseDuration)}
	}
	return nil
}

// checkTenancy validates the trust settings.
func (f *operatorFlags) checkTenancy() error {
	if f.podCIDRLimit4 < 0 || f.podCIDRLimit4 > 32 {
		return &config.Error{Field: "--pod-cidr-limit-v4", Msg: fmt.Sprintf("expected a prefix length from 0 (no limit) to 32, got %d", f.podCIDRLimit4)}
	}
	if f.podCIDRLimit6 < 0 || f.podCIDRLimit6 > 128 {
		return &config.Error{Field: "--pod-cidr-limit-v6", Msg: fmt.Sprintf("expected a prefix length from 0 (no limit) to 128, got %d", f.podCIDRLimit6)}
	}
	if f.credentialsWarning < time.Hour {
		return &config.Error{Field: "--credentials-expiry-warning", Msg: fmt.Sprintf("expected at least 1h, got %s", f.credentialsWarning)}
	}
	if f.accessInterval < time.Second {
		return &config.Error{Field: "--access-interval", Msg: fmt.Sprintf("expected at least 1s, got %s", f.accessInterval)}
	}
	for _, ns := range f.trustNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return &config.Error{Field: "--trust-namespace", Msg: fmt.Sprintf("%q is not a namespace name: %s", ns, strings.Join(errs, "; "))}
		}
	}
	for _, u := range f.trustedAuthURLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return &config.Error{Field: "--trusted-auth-url", Msg: fmt.Sprintf("expected an http(s) URL such as https://keystone.example:5000/v3, got %q", u)}
		}
	}
	return nil
}

// podPrefixLimit turns a --pod-cidr-limit-v4/-v6 value into tenancy's: 0 is no limit.
func podPrefixLimit(flag int) int {
	if flag == 0 {
		return tenancy.NoPodPrefixLimit
	}
	return flag
}

// checkExtension validates the runtime extension's flags: a port, and a directory with a readable tls.crt and
// tls.key (the server would fail only once started).
func (f *operatorFlags) checkExtension() error {
	switch {
	case f.extensionPort == 0 && f.extensionCertDir == "":
		return nil
	case f.extensionPort == 0:
		return &config.Error{Field: "--runtime-extension-cert-dir", Msg: "needs --runtime-extension-port"}
	case f.extensionPort < 0 || f.extensionPort > 65535:
		return &config.Error{Field: "--runtime-extension-port", Msg: fmt.Sprintf("expected a port 1-65535, got %d", f.extensionPort)}
	case f.extensionCertDir == "":
		return &config.Error{Field: "--runtime-extension-cert-dir", Msg: "expected the directory of the extension's tls.crt and tls.key"}
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		p := filepath.Join(f.extensionCertDir, name)
		fh, err := os.Open(p)
		if err != nil {
			return &config.Error{Field: "--runtime-extension-cert-dir", Msg: fmt.Sprintf("expected %s: %v", name, err)}
		}
		_ = fh.Close()
	}
	return nil
}
