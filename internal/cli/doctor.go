package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/controllers/flight"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// ExitDoctorFailed is the exit code of `vitals doctor` when a check failed.
const ExitDoctorFailed = 1

type doctorFlags struct {
	kube               kubeFlags
	namespace          string
	cloud              string
	trustNamespaces    []string
	trustedAuthURLs    []string
	podCIDRLimit4      int
	podCIDRLimit6      int
	allowInsecure      bool
	allowLocal         bool
	allowLoopback      bool
	quotaThreshold     int
	timeout            time.Duration
	credentialsWarning time.Duration
	output             string
}

func newDoctorCommand() *cobra.Command {
	f := &doctorFlags{}
	cmd := &cobra.Command{
		Use:   "doctor NAME --namespace NS",
		Short: "Check a VitalsCluster and its cloud as the operator would, before it acts; changes nothing",
		Long: `Check one VitalsCluster with the operator's own code, and print a table (-o json|yaml: the same as data):

  crd                  the VitalsCluster kind is served by the API server
  cluster              the VitalsCluster exists
  cloud                its credentials (its Secret, or the operator's for a namespace given with
                       --trust-namespace) authenticate, and its project owns the router, network, subnet
                       and security group it names; its pod CIDRs are within the limits and overlap no
                       older cluster's on the router (tenancy)
  routes               Neutron offers extraroute-atomic (the route collector's atomic route updates)
  route-headroom       the router's routes against the cluster's route limit (flight's rule)
  quota-network        the project's Neutron quotas of ports, floating IPs, security groups and rules,
                       networks and subnets: warning from --quota-threshold percent, failed when exhausted
  quota-block-storage  Cinder's volumes, snapshots and gigabytes: for information (deorbit only deletes
                       them), a warning at most
  quota-load-balancer  Octavia's load balancers: for information, as Cinder's
  workload             its kubeconfig Secret is accepted and the workload API answers with it (skipped
                       without spec.kubeconfigSecretRef, unless --allow-local-workload)

A check that cannot run because an earlier one failed is skipped; so is a quota check whose service
has no quota API, is not in the catalog, or does not let the credentials read the quotas (the reason
says which). Exit codes: 0 no check failed (warnings included), 1 a check failed, 2 bad flags or
configuration.`,
		Example: "  vitals doctor prod-eu -n clusters\n  vitals doctor prod-eu -n clusters --context mgmt --os-cloud prod --trust-namespace clusters -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	fl := cmd.Flags()
	addKubeFlags(cmd, &f.kube, "the cluster holding the VitalsCluster", "in-cluster, then KUBECONFIG")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the VitalsCluster (required)")
	addCloudFlag(cmd, &f.cloud, "the operator's own credentials: cloud of clouds.yaml (default: OS_CLOUD, else OS_* variables; none: only credentials Secrets)")
	fl.StringArrayVar(&f.trustNamespaces, "trust-namespace", nil, "namespace whose VitalsClusters may use the operator's credentials, as the operator's flag")
	fl.StringArrayVar(&f.trustedAuthURLs, "trusted-auth-url", nil, "Keystone URL prefix trusted for credentials Secrets, as the operator's flag")
	fl.IntVar(&f.podCIDRLimit4, "pod-cidr-limit-v4", 12, "shortest IPv4 pod CIDR prefix, as the operator's flag (0: no limit)")
	fl.IntVar(&f.podCIDRLimit6, "pod-cidr-limit-v6", 44, "shortest IPv6 pod CIDR prefix, as the operator's flag (0: no limit)")
	fl.BoolVar(&f.allowInsecure, "allow-insecure-workload", false, "accept insecure workload kubeconfigs, as the operator's flag")
	fl.BoolVar(&f.allowLocal, "allow-local-workload", false, "a VitalsCluster without spec.kubeconfigSecretRef is the cluster of --kubeconfig, as the operator's flag (default: its workload check is skipped)")
	fl.BoolVar(&f.allowLoopback, "allow-loopback-workload", false, "accept workload kubeconfigs whose server is on a loopback address, as the operator's flag")
	fl.IntVar(&f.quotaThreshold, "quota-threshold", 80, "percent of a quota in use from which the quota checks warn (1 to 100)")
	fl.DurationVar(&f.credentialsWarning, "credentials-expiry-warning", access.DefaultExpiryWarning, "how long before the cluster's credentials expire the credentials check warns, as the operator's flag")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "time limit of all checks")
	clirun.AddOutputFlag(cmd, &f.output)
	// NAME and --namespace complete from the cluster of --kubeconfig (else in-cluster, then KUBECONFIG).
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 || f.namespace == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f.completeNames(cmd.Context(), &v1alpha1.VitalsClusterList{}, client.InNamespace(f.namespace))
	}
	clirun.Must(cmd, "namespace", cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f.completeNames(cmd.Context(), &corev1.NamespaceList{})
	}))
	return cmd
}

// completeNames lists the names of the objects of list for shell completion, within a few seconds;
// no cluster at hand completes nothing.
func (f *doctorFlags) completeNames(ctx context.Context, list client.ObjectList, opts ...client.ListOption) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := f.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]cobra.Completion, 0, len(items))
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// client connects to the cluster holding the VitalsClusters.
func (f *doctorFlags) client() (client.Client, error) {
	rc, err := restConfig(f.kube, "", "", "")
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to the Kubernetes API %s: %w", rc.Host, err)
	}
	return c, nil
}

// DoctorCheck is one line of `vitals doctor`.
type DoctorCheck struct {
	Name   string `json:"name"`
	Result string `json:"result"` // ok, warning, failed, skipped
	Detail string `json:"detail,omitempty"`
	Reason string `json:"reason,omitempty"` // the condition reason of a failure (tenancy, workload, quota)
	// Quotas are the quotas a quota check judged.
	Quotas []DoctorQuota `json:"quotas,omitempty"`
}

// DoctorReport is what `vitals doctor -o json|yaml` prints.
type DoctorReport struct {
	Cluster   string        `json:"cluster"`
	ProjectID string        `json:"projectID,omitempty"`
	Checks    []DoctorCheck `json:"checks"`
	// OK: no check failed (warnings and skipped quota checks do not count).
	OK bool `json:"ok"`
}

func (f *doctorFlags) run(ctx context.Context, out, stderr io.Writer, name string) error {
	if err := clirun.CheckOutput(f.output); err != nil {
		return err
	}
	if f.namespace == "" {
		return clirun.Usagef("--namespace is required")
	}
	if f.quotaThreshold < 1 || f.quotaThreshold > 100 {
		return clirun.Usagef("--quota-threshold: expected a percent from 1 to 100, got %d", f.quotaThreshold)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := f.client()
	if err != nil {
		return err
	}
	var operatorAuth *openstack.Auth
	switch a, err := openstack.PickAuth(openstack.AuthSources{Cloud: f.cloud}); {
	case err == nil:
		operatorAuth = &a
	case !errors.Is(err, openstack.ErrNoCredentials):
		return err
	}
	rep := DoctorReport{Cluster: f.namespace + "/" + name, Checks: []DoctorCheck{}}
	add := func(check, result, detail, reason string) {
		rep.Checks = append(rep.Checks, DoctorCheck{Name: check, Result: result, Detail: detail, Reason: reason})
	}
	skipped := func(checks ...string) {
		for _, ch := range checks {
			add(ch, "skipped", "an earlier check failed", "")
		}
	}
	// The checks' findings are the report; only warnings of the code they run go to stderr.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	f.check(ctx, c, name, operatorAuth, log, add, skipped, &rep)
	rep.OK = true
	for _, ch := range rep.Checks {
		rep.OK = rep.OK && ch.Result != "failed"
	}
	err = clirun.WriteOutput(out, f.output, rep, func() error {
		fmt.Fprintf(out, "VitalsCluster %s", rep.Cluster)
		if rep.ProjectID != "" {
			fmt.Fprintf(out, ", project %s", rep.ProjectID)
		}
		fmt.Fprintln(out)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
		for _, ch := range rep.Checks {
			d := ch.Detail
			if ch.Reason != "" {
				d = ch.Reason + ": " + d
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Name, ch.Result, d)
		}
		return tw.Flush()
	})
	if err != nil {
		return err
	}
	if !rep.OK {
		return exitError{code: ExitDoctorFailed, err: fmt.Errorf("VitalsCluster %s: a check failed", rep.Cluster)}
	}
	return nil
}

// check runs the checks in order, each through the operator's own code.
func (f *doctorFlags) check(ctx context.Context, c client.Client, name string, operatorAuth *openstack.Auth, log *slog.Logger,
	add func(check, result, detail, reason string), skipped func(...string), rep *DoctorReport) {
	var list v1alpha1.VitalsClusterList
	if err := c.List(ctx, &list, client.InNamespace(f.namespace), client.Limit(1)); err != nil {
		detail := fmt.Sprintf("list VitalsClusters: %v (install deploy/crds/)", err)
		if meta.IsNoMatchError(err) {
			detail = fmt.Sprintf("the API server does not serve vitalsclusters.%s: the CRD is not installed (the chart installs it; or kubectl apply --server-side -f deploy/crds/)",
				v1alpha1.GroupVersion.Group)
		}
		add("crd", "failed", detail, "")
		skipped(append([]string{"cluster", "cloud", "routes", "route-headroom", "volume-attachments", "credentials"}, append(quotaCheckNames(), "workload", checkWorkloadCredentials)...)...)
		return
	}
	add("crd", "ok", "vitalsclusters."+v1alpha1.GroupVersion.Group+" served", "")
	var vc v1alpha1.VitalsCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: name}, &vc); err != nil {
		detail := err.Error()
		if apierrors.IsNotFound(err) {
			detail = fmt.Sprintf("no VitalsCluster %s in namespace %s", name, f.namespace)
		}
		add("cluster", "failed", detail, "")
		skipped(append([]string{"cloud", "routes", "route-headroom", "volume-attachments", "credentials"}, append(quotaCheckNames(), "workload", checkWorkloadCredentials)...)...)
		return
	}
	add("cluster", "ok", fmt.Sprintf("router %s, pod CIDRs %v", vc.Spec.OpenStack.RouterID, vc.Spec.PodCIDRs), "")

	opts := tenancy.Options{Secrets: c, Clusters: c, TrustedNamespaces: f.trustNamespaces, TrustedAuthURLs: f.trustedAuthURLs,
		Limits: tenancy.Limits{MaxPodPrefix4: podPrefixLimit(f.podCIDRLimit4), MaxPodPrefix6: podPrefixLimit(f.podCIDRLimit6)}, Logger: log}
	if operatorAuth != nil {
		a := *operatorAuth
		opts.Operator = func(ctx context.Context) (tenancy.Connection, error) {
			return openstack.Connect(ctx, openstack.Config{Auth: a})
		}
		opts.TrustedAuthURLs = append(opts.TrustedAuthURLs, a.Options.IdentityEndpoint)
	}
	scope, err := tenancy.NewVerifier(opts).Resolve(ctx, &vc)
	var keystone *tenancy.Keystone // the cluster's proven Keystone, for its workload Secrets
	if err == nil {
		keystone = scope.Keystone
	}
	if err != nil {
		var r *tenancy.Refusal
		if errors.As(err, &r) {
			add("cloud", "failed", r.Message, r.Reason)
		} else {
			add("cloud", "failed", err.Error(), tenancy.ReasonCloudUnavailable)
		}
		skipped(append([]string{"routes", "route-headroom", "servers", "volume-attachments", "credentials"}, quotaCheckNames()...)...)
	} else {
		rep.ProjectID = scope.ProjectID
		add("cloud", "ok", fmt.Sprintf("project %s proven (%s); router %s is the project's", scope.ProjectID, scope.Source, scope.Router.ID), "")
		switch atomic, err := scope.Cloud.AtomicRoutes(ctx); {
		case err != nil:
			add("routes", "failed", fmt.Sprintf("read Neutron's extensions: %v", err), "")
		case !atomic:
			add("routes", "failed", "Neutron does not offer extraroute-atomic: enable the extension (service_plugins router, extraroute)", "")
		default:
			add("routes", "ok", "extraroute-atomic offered", "")
		}
		routeHeadroom(&vc, scope, add)
		serversSelected(ctx, &vc, scope, add)
		volumeAttachments(ctx, &vc, scope, add)
		credentialsExpiry(ctx, scope, time.Now(), f.credentialsWarning, add)
		rep.Checks = append(rep.Checks, quotaChecks(ctx, scope.Cloud, float64(f.quotaThreshold)/100)...)
	}

	if vc.Spec.KubeconfigSecretRef == nil && !f.allowLocal {
		// Not a failure: the operator serves such a cluster without its workload (flight and deorbit's
		// Kubernetes phases wait for a kubeconfig), unless it runs with --allow-local-workload.
		add("workload", "skipped", "spec.kubeconfigSecretRef is not set: the operator reaches no workload cluster for it (unless it runs with "+
			"--allow-local-workload, the chart's operator.workload.allowLocal); give --allow-local-workload to check the cluster of --kubeconfig as that one", "")
		add(checkWorkloadCredentials, "skipped", "no workload cluster to read its Secrets from", "")
		return
	}
	local, err := restConfig(f.kube, "", "", "")
	if err != nil {
		add("workload", "failed", err.Error(), "")
		skipped(checkWorkloadCredentials)
		return
	}
	wl, err := workload.NewManager(workload.Options{Secrets: c, Checks: remediation.NewChecks(clock.RealClock{}), AllowLocal: f.allowLocal, Local: local,
		Rules: workload.KubeconfigRules{AllowInsecure: f.allowInsecure, AllowLoopback: f.allowLoopback}, UserAgent: "vitals-doctor", Logger: log})
	if err != nil {
		add("workload", "failed", err.Error(), "")
		skipped(checkWorkloadCredentials)
		return
	}
	defer wl.Close()
	cl, err := wl.For(ctx, &vc)
	if err != nil {
		var we *workload.Error
		if errors.As(err, &we) {
			add("workload", "failed", we.Message, we.Reason)
		} else {
			add("workload", "failed", err.Error(), "")
		}
		skipped(checkWorkloadCredentials)
		return
	}
	var nodes corev1.NodeList
	if err := cl.Client().List(ctx, &nodes, client.Limit(500)); err != nil {
		// told as the operator tells it: no address or certificate field of the tenant's kubeconfig
		var we *workload.Error
		if errors.As(workload.Describe(err, "the Nodes", f.timeout), &we) {
			add("workload", "failed", fmt.Sprintf("list nodes through %s: %s", cl.Source(), we.Message), we.Reason)
		}
		skipped(checkWorkloadCredentials)
		return
	}
	add("workload", "ok", fmt.Sprintf("the API answers through %s: %d nodes", cl.Source(), len(nodes.Items)), "")
	workloadCredentials(ctx, &vc, keystone, cl.Client(), time.Now(), f.credentialsWarning, add)
}

// serversSelected warns when the cluster's servers' selector (spec.controllers.flight.servers.metadata, else
// spec.openstack.networkID) matches no server of its project: most often a typo, and deorbit's servers-gone
// interlock can never prove a teardown by it (the ServersSelected condition says the same).
func serversSelected(ctx context.Context, vc *v1alpha1.VitalsCluster, scope *tenancy.Scope, add func(check, result, detail, reason string)) {
	which, up, going, err := deorbit.SelectedServers(ctx, vc, scope.Cloud, scope.ProjectID)
	switch {
	case which == "":
		add("servers", "warning", "neither spec.controllers.flight.servers.metadata nor spec.openstack.networkID tells the cluster's servers apart: "+
			"flight cannot match servers, and deorbit's servers-gone interlock never proves a teardown", deorbit.ReasonNoSelector)
	case err != nil:
		add("servers", "failed", "list the project's servers: "+err.Error(), "")
	case len(up)+len(going) == 0:
		add("servers", "warning", fmt.Sprintf("the selector (%s) matches no server in project %s: check it for a typo; until it matches, "+
			"deorbit's servers-gone interlock proves nothing", which, scope.ProjectID), deorbit.ReasonNoServerMatched)
	default:
		add("servers", "ok", fmt.Sprintf("the selector (%s) matches %d servers (%d up)", which, len(up)+len(going), len(up)), "")
	}
}

// routeHeadroom reports the router's routes against the cluster's route limit, by flight's rule (the
// RouteHeadroom condition): failed from flight.HeadroomPercent of it.
func routeHeadroom(vc *v1alpha1.VitalsCluster, scope *tenancy.Scope, add func(check, result, detail, reason string)) {
	s, err := flight.SettingsOf(vc, v1alpha1.ControllerDefaults{})
	switch {
	case err != nil:
		add("route-headroom", "failed", err.Error(), "InvalidSpec")
		return
	case scope.Router == nil:
		add("route-headroom", "ok", "the spec names no router: no routes to count", "")
		return
	}
	switch r := flight.RouteHeadroom(len(scope.Router.Routes), s.MaxRoutes); r.Status {
	case metav1.ConditionFalse:
		add("route-headroom", "failed", fmt.Sprintf("router %s: %s", scope.Router.ID, r.Message), r.Reason)
	default:
		add("route-headroom", "ok", fmt.Sprintf("router %s: %s", scope.Router.ID, r.Message), "")
	}
}
