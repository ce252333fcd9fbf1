package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/internal/base/bounded"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// ExitDebris is the exit code of `vitals deorbit` when it gave up with debris left in the cloud.
const ExitDebris = 3

// ExitRefused is the exit code of `vitals deorbit` when it refused the sweep's deletes for a proof it could not
// run (DeorbitReport.Proofs) and left what the sweep found untouched.
const ExitRefused = 4

type deorbitFlags struct {
	kube        kubeFlags
	mgmt        kubeFlags
	vcl         string
	cloud       string
	clusterName string
	router      string
	subnet      string
	podCIDRs    []string
	protect     []string
	dryRun      bool
	exclude     []string
	state       string
	giveUp      time.Duration
	grace       time.Duration
	cloudWait   time.Duration
	parallel    int
	budget      int
	output      string
}

func newDeorbitCommand() *cobra.Command {
	f := &deorbitFlags{}
	cmd := &cobra.Command{
		Use:   "deorbit --kubeconfig FILE --cluster-name NAME [--router ID --pod-cidr CIDR]",
		Short: "Delete a cluster's volumes, load balancers and routes, until the cloud confirms them gone",
		Long: `The operator's deorbit, without the operator: the operator's engine with the operator's proofs. With the
workload cluster's kubeconfig and the cloud's credentials, delete the cluster's VolumeSnapshots, the claims of
its Cinder volumes and its LoadBalancer Services, remove its routes (inside --pod-cidr) from --router, wait
until Cinder and Octavia answer 404 for each volume and load balancer, then sweep the project for what is left
of the cluster (volumes with the Cinder CSI metadata cinder.csi.openstack.org/cluster=NAME, load balancers named
or tagged kube_service_NAME_<namespace>_<service>, their VIP ports and floating IPs) and delete it. Only
resources of the credentials' project are touched. Progress is printed at each step: phase, resources done and
remaining, elapsed time.

The proofs are the operator's, in the same code: --subnet (or the VitalsCluster's spec.openstack.subnetID) limits
the load balancers to those with their VIP on the nodes' subnet, and the routes to those through it; the keep
markers (vitals.vitalsproject.io/keep on a PersistentVolume, its claim, a VolumeSnapshot, or in a volume's
Cinder metadata), Retain, and the keep ledger (read from the workload cluster at the first step, and with
--vitalscluster the one the operator recorded while the cluster lived) keep volumes and snapshots; an excluded
load balancer (--exclude, or the VitalsCluster's annotation vitals.vitalsproject.io/exclude) keeps its VIP port
and floating IP. The same-named neighbours guard reads the VitalsClusters of --management-kubeconfig: the sweep
deletes nothing while another VitalsCluster names the same cloud cluster in the project. Without the
management cluster that guard cannot run, and the sweep deletes nothing directly: what it finds is reported not
proven, and the run exits 4. The proofs the run could and could not run are printed after its first step. The
command adds only its confirmation (running it stands for the operator's interlock) and --dry-run.

Credentials: --cloud (clouds.yaml) or OS_CLOUD, else OS_* variables. --dry-run deletes nothing and
prints the plan: what would be deleted on both sides. --state FILE keeps the progress, so that a run cut
short resumes where it was.

With -o json or -o yaml the progress goes to stderr and stdout gets one document at the end: the
cluster, the project, the proofs, the result (done, planned, refused or gaveUp) and the status (phase, counts,
every resource with its state, the debris left, what was not proven the cluster's).

Exit codes: 0 everything of the cluster is confirmed gone (or, with --dry-run, the plan was printed);
1 an error stopped the run; 2 bad flags or configuration; 3 gave up after --give-up-after with debris
left in the cloud (printed, and in --state); 4 the sweep found resources it refused to delete for a proof
it could not run (printed).`,
		Example: "  vitals deorbit --kubeconfig prod-eu.kubeconfig --os-cloud prod --cluster-name prod-eu --router 6f1c --pod-cidr 198.19.0.0/16 --subnet 2b7e \\\n" +
			"    --management-kubeconfig mgmt.kubeconfig --vitalscluster tenants/prod-eu --dry-run\n" +
			"  vitals deorbit --os-cloud prod --cluster-name prod-eu --management-kubeconfig mgmt.kubeconfig --state prod-eu.deorbit.json -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	addKubeFlags(cmd, &f.kube, "the workload cluster", "none: its Kubernetes phases are skipped; with --context, KUBECONFIG")
	addCloudFlag(cmd, &f.cloud, "cloud of clouds.yaml (default: OS_CLOUD, else OS_* variables)")
	fl.StringVar(&f.clusterName, "cluster-name", "", "the cluster's name on the cloud side: Cinder CSI's --cluster and the cloud controller manager's --cluster-name (required)")
	fl.StringVar(&f.router, "router", "", "the router carrying the cluster's pod routes, by its ID or a name unique in the project (empty: no routes are removed)")
	fl.StringSliceVar(&f.podCIDRs, "pod-cidr", nil, "pod CIDR of the cluster (repeatable; required with --router)")
	fl.StringVar(&f.subnet, "subnet", "", "ID of the nodes' subnet (spec.openstack.subnetID), proven the project's: a load balancer is the cluster's by its name only with its VIP there, a route only with its nexthop in it (empty: any subnet)")
	fl.StringVar(&f.mgmt.kubeconfig, "management-kubeconfig", "", "kubeconfig of the management cluster holding the VitalsClusters: the sweep deletes nothing while another VitalsCluster names the same cloud cluster in the project "+
		"(empty: that guard cannot run, and the sweep deletes nothing directly)")
	clirun.CompleteFiles(cmd, "management-kubeconfig")
	clirun.AddContextFlagNamed(cmd, "management-context", "context of --management-kubeconfig (default: its current-context)", &f.mgmt.context, &f.mgmt.kubeconfig)
	fl.StringVar(&f.vcl, "vitalscluster", "", "NAMESPACE/NAME of the cluster's own VitalsCluster in the management cluster: not counted as a neighbour; its keep ledger (status.deorbit.seen.keep), "+
		"its exclusions (annotation "+v1alpha1.AnnotationExclude+") and its spec.openstack.subnetID apply")
	fl.StringSliceVar(&f.protect, "protect", nil, "route DESTINATION[@NEXTHOP] inside the pod CIDRs never removed, like routegc's protectedRoutes (repeatable)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "delete nothing; print what would be deleted")
	fl.StringSliceVar(&f.exclude, "exclude", nil, "a resource's ID or name never deleted (repeatable)")
	fl.StringVar(&f.state, "state", "", "file keeping the progress (JSON); an existing one is resumed")
	fl.DurationVar(&f.giveUp, "give-up-after", time.Hour, "give up after this long and print the debris left")
	fl.DurationVar(&f.grace, "unreachable-grace", time.Minute, "how long the workload cluster may be unreachable before its phases are skipped")
	fl.DurationVar(&f.cloudWait, "cloud-wait-timeout", deorbit.DefaultCloudWaitTimeout, "how long to wait for the cloud to confirm what the cluster's controllers delete, before the sweep")
	fl.IntVar(&f.parallel, "parallel-deletes", deorbit.DefaultWorkers, "deletes and reads running at once")
	fl.IntVar(&f.budget, "budget", deorbit.DefaultBudget, "most deletes issued per step")
	clirun.AddOutputFlag(cmd, &f.output)
	clirun.CompleteFiles(cmd, "state", "json")
	return cmd
}

func (f *deorbitFlags) validate() (deorbit.Target, error) {
	t := deorbit.Target{Key: f.clusterName, ClusterName: f.clusterName, RouterID: f.router}
	if err := clirun.CheckOutput(f.output); err != nil {
		return t, err
	}
	switch {
	case f.clusterName == "":
		return t, &config.Error{Field: "--cluster-name", Msg: "required: the name the cloud provider tags the cluster's resources with"}
	case f.router != "" && len(f.podCIDRs) == 0:
		return t, &config.Error{Field: "--pod-cidr", Msg: "required with --router: only routes inside the pod CIDRs are the cluster's"}
	case f.vcl != "" && f.mgmt.kubeconfig == "" && f.mgmt.context == "":
		return t, &config.Error{Field: "--vitalscluster", Msg: "requires --management-kubeconfig (or --management-context): the VitalsCluster is read there"}
	case f.vcl != "" && !validKey(f.vcl):
		return t, &config.Error{Field: "--vitalscluster", Msg: "expected NAMESPACE/NAME"}
	case f.giveUp < time.Minute:
		return t, &config.Error{Field: "--give-up-after", Msg: fmt.Sprintf("expected at least 1m, got %s", f.giveUp)}
	case f.grace < 0:
		return t, &config.Error{Field: "--unreachable-grace", Msg: fmt.Sprintf("expected a non-negative duration, got %s", f.grace)}
	case f.cloudWait < 0:
		return t, &config.Error{Field: "--cloud-wait-timeout", Msg: fmt.Sprintf("expected a non-negative duration, got %s", f.cloudWait)}
	case f.parallel < 1 || f.parallel > 100:
		return t, &config.Error{Field: "--parallel-deletes", Msg: fmt.Sprintf("expected 1 to 100, got %d", f.parallel)}
	case f.budget < 1 || f.budget > 10000:
		return t, &config.Error{Field: "--budget", Msg: fmt.Sprintf("expected 1 to 10000, got %d", f.budget)}
	}
	pods, err := parsePodCIDRs(f.podCIDRs)
	if err != nil {
		return t, err
	}
	t.PodCIDRs = pods
	t.SubnetID = strings.TrimSpace(f.subnet)
	if t.Protected, err = parseProtect(f.protect); err != nil {
		return t, err
	}
	return t, nil
}

// DeorbitReport is what `vitals deorbit -o json|yaml` prints when it ends.
type DeorbitReport struct {
	Cluster   string `json:"cluster"`
	ProjectID string `json:"projectID,omitempty"`
	// Proofs are the operator's proofs as the command ran them, or why it could not (and what it refused then).
	Proofs []DeorbitProof `json:"proofs"`
	// Result is done (everything confirmed gone), planned (--dry-run) or gaveUp (debris left).
	Result string                  `json:"result"`
	Status *v1alpha1.DeorbitStatus `json:"status"`
}

// DeorbitProof is one of the operator's proofs in a run of the command.
type DeorbitProof struct {
	Name string `json:"name"` // subnet, neighbours, keepLedger
	// Ran: the proof was run as the operator runs it; else Note says why not and what is refused or allowed then.
	Ran  bool   `json:"ran"`
	Note string `json:"note"`
}

// Names of the proofs (DeorbitProof.Name).
const (
	ProofSubnet     = "subnet"
	ProofNeighbours = "neighbours"
	ProofKeepLedger = "keepLedger"
)

// Results of a deorbit run (DeorbitReport.Result).
const (
	DeorbitDone    = "done"
	DeorbitPlanned = "planned"
	DeorbitGaveUp  = "gaveUp"
	// DeorbitRefused: the sweep's deletes were refused for a proof the command could not run (ExitRefused).
	DeorbitRefused = "refused"
)

// maxDeorbitState bounds the --state file a previous run wrote (its status, debris report included).
const maxDeorbitState = 16 << 20

func (f *deorbitFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	target, err := f.validate()
	if err != nil {
		return err
	}
	// The progress is for people: with -o json|yaml it goes to stderr, and stdout gets the report only.
	out := stdout
	if f.output == "json" || f.output == "yaml" {
		out = stderr
	}
	st := &v1alpha1.DeorbitStatus{}
	if f.state != "" {
		if b, err := bounded.ReadFile(ctx, f.state, maxDeorbitState); err == nil {
			if err := json.Unmarshal(b, st); err != nil {
				return &config.Error{File: f.state, Field: "--state", Msg: "expected the JSON a previous run wrote: " + err.Error()}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return &config.Error{File: f.state, Field: "--state", Msg: err.Error(), Err: err}
		}
	}
	rep := DeorbitReport{Cluster: f.clusterName}
	report := func(result string, text func()) error {
		rep.Result, rep.Status = result, st
		return clirun.WriteOutput(stdout, f.output, rep, func() error { text(); return nil })
	}
	in := deorbit.Input{Target: target, Settings: deorbit.Settings{GiveUpAfter: f.giveUp, UnreachableGracePeriod: f.grace,
		CloudWaitTimeout: f.cloudWait, Budget: f.budget, DryRun: f.dryRun}}
	if f.kube.kubeconfig == "" && f.kube.context == "" {
		in.SkipWorkload = "no --kubeconfig given"
	} else {
		cfg, err := clirun.LoadKubeconfig(f.kube.kubeconfig, f.kube.context)
		if err != nil {
			return err
		}
		// every delete goes through the fence the engine puts in its context (Fence below)
		if wc, err := client.NewWithWatch(cfg, client.Options{Scheme: clientgoscheme.Scheme}); err != nil {
			// The API could not be asked for its kinds: unreachable for now.
			in.WorkloadErr = err
		} else {
			in.Workload = fencing.Client(wc)
		}
	}
	exclude := map[string]bool{}
	for _, x := range f.exclude {
		exclude[strings.TrimSpace(x)] = true
	}
	mgmt, own, err := f.management(ctx)
	if err != nil {
		return err
	}
	if own != nil {
		// The operator's word on its cluster: its exclusions, its subnet, the keep ledger recorded while it lived.
		for x := range remediation.ParseExclusions(own.Annotations[v1alpha1.AnnotationExclude]) {
			exclude[x] = true
		}
		if in.Target.SubnetID == "" {
			in.Target.SubnetID = own.Spec.OpenStack.SubnetID
		}
		if d := own.Status.Deorbit; d != nil && d.Seen != nil && st.Seen == nil {
			st.Seen = d.Seen.DeepCopy()
		}
	}
	auth, err := cliAuth(f.cloud)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	conn, err := openstack.Connect(cctx, openstack.Config{Auth: auth})
	if err == nil && f.router != "" {
		// A name is the router of that name in the credentials' project; ownership is then proven by ID.
		if in.Target.RouterID, err = resolveRouter(cctx, conn, f.router, conn.ProjectID()); err != nil {
			err = &config.Error{Field: "--router", Msg: err.Error()}
		}
	}
	if err == nil {
		var scope *tenancy.Scope
		// The project is the credentials' own, proven as the operator proves a cluster's; the router and the subnet too.
		scope, err = tenancy.ScopeOf(cctx, conn, v1alpha1.OpenStackSpec{RouterID: in.Target.RouterID, SubnetID: in.Target.SubnetID}, "the command's credentials")
		if err == nil && own != nil && own.Status.ProjectID != "" && own.Status.ProjectID != scope.ProjectID {
			// Its ledger, exclusions and subnet are another project's cluster's.
			err = &config.Error{Field: "--vitalscluster", Msg: fmt.Sprintf("VitalsCluster %s is of project %s, not the credentials' project %s", f.vcl, own.Status.ProjectID, scope.ProjectID)}
		}
		if err == nil {
			in.Cloud = scope.Cloud
			in.Target.Narrow(scope)
			rep.ProjectID = scope.ProjectID
			fmt.Fprintf(out, "deorbit %s: project %s\n", f.clusterName, scope.ProjectID)
			if mgmt != nil {
				var self types.UID
				if own != nil {
					self = own.UID
				}
				guard := deorbit.NeighbourGuard(mgmt, "", self, scope.ProjectID, f.clusterName)
				// Asked before the run too: a neighbour found now refuses the sweep for the whole run, which ends with
				// what the sweep found reported (the operator waits until its give-up for the neighbour to let go).
				switch why, gerr := guard(cctx); {
				case gerr != nil:
					err = fmt.Errorf("the same-named neighbours guard: %w", gerr)
				case why != "":
					in.SweepRefused = why
				default:
					in.SweepGuard = guard
				}
			} else {
				in.SweepRefused = "the same-named neighbours guard could not run: without --management-kubeconfig the VitalsClusters that may name the same cloud cluster " +
					"cannot be read, so the sweep deletes nothing directly (the operator deletes nothing either while another VitalsCluster names it)"
			}
		}
	}
	cancel()
	var cerr *config.Error
	if errors.As(err, &cerr) {
		return err
	}
	if err != nil {
		return fmt.Errorf("prove the cloud: %w", err)
	}
	policy := &cliPolicy{dryRun: f.dryRun, exclude: exclude, out: out}
	in.Policy = policy
	clk := clock.RealClock{}
	e := &deorbit.Engine{Clock: clk, Workers: f.parallel}
	begin := clk.Now()
	for first := true; ; first = false {
		res := e.Step(ctx, in, st)
		if first {
			// After the first step: the engine has taken the keep ledger from the workload cluster by then.
			rep.Proofs = deorbitProofs(in, st, f, mgmt != nil, own)
			printProofs(out, rep.Proofs)
		}
		printProgress(out, st, clk.Now().Sub(begin))
		if f.state != "" {
			if err := writeState(f.state, st); err != nil {
				return err
			}
		}
		switch {
		case st.Phase == v1alpha1.DeorbitPhaseDryRunPlanned || (f.dryRun && res.Release):
			return report(DeorbitPlanned, func() {
				printResources(out, "plan (dry run): would delete", st.Resources, v1alpha1.DeorbitWouldDelete)
				if len(st.NotProven) > 0 {
					printResources(out, "not proven the cluster's: would never be touched", st.NotProven, "")
				}
				if note := omittedNote(st); note != "" {
					fmt.Fprintln(out, "  "+note)
				}
			})
		case st.Phase == v1alpha1.DeorbitPhaseGaveUp:
			if err := report(DeorbitGaveUp, func() { printResources(out, "gave up; debris left in the cloud", st.Debris, "") }); err != nil {
				return err
			}
			return exitError{code: ExitDebris, err: fmt.Errorf("gave up after %s with %d resources left", f.giveUp, len(st.Debris))}
		case res.Release && in.SweepRefused != "" && len(st.NotProven) > 0:
			if err := report(DeorbitRefused, func() {
				fmt.Fprintf(out, "stopped in %s: %s\n", clk.Now().Sub(begin).Round(time.Second), deorbitSummary(f.clusterName, st))
				printResources(out, "not proven the cluster's, never touched", st.NotProven, "")
			}); err != nil {
				return err
			}
			return exitError{code: ExitRefused, err: fmt.Errorf("refused to delete %d resource(s) the sweep found: %s", len(st.NotProven), in.SweepRefused)}
		case res.Release:
			return report(DeorbitDone, func() {
				fmt.Fprintf(out, "done in %s: %s\n", clk.Now().Sub(begin).Round(time.Second), deorbitSummary(f.clusterName, st))
				if countState(st.Resources, v1alpha1.DeorbitKept) > 0 {
					printResources(out, "kept in the cloud (excluded, or a volume its PersistentVolume retains)", st.Resources, v1alpha1.DeorbitKept)
				}
				if len(st.NotProven) > 0 {
					printResources(out, "not proven the cluster's, never touched", st.NotProven, "")
				}
			})
		}
		if !backoff.Sleep(ctx, clk, time.Until(res.Next)) {
			return fmt.Errorf("stopped in phase %s: %w", st.Phase, context.Cause(ctx))
		}
	}
}

// management connects to the management cluster (nil without --management-kubeconfig) and reads the cluster's own
// VitalsCluster (nil without --vitalscluster).
func (f *deorbitFlags) management(ctx context.Context) (client.Reader, *v1alpha1.VitalsCluster, error) {
	if f.mgmt.kubeconfig == "" && f.mgmt.context == "" {
		return nil, nil, nil
	}
	cfg, err := clirun.LoadKubeconfig(f.mgmt.kubeconfig, f.mgmt.context)
	if err != nil {
		var cerr *config.Error
		if errors.As(err, &cerr) {
			cerr.Field = "--management-" + strings.TrimPrefix(cerr.Field, "--")
		}
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the management cluster %s: %w", cfg.Host, err)
	}
	if f.vcl == "" {
		return c, nil, nil
	}
	ns, name, _ := strings.Cut(f.vcl, "/")
	own := &v1alpha1.VitalsCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, own); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &config.Error{Field: "--vitalscluster", Msg: fmt.Sprintf("no VitalsCluster %s in the management cluster", f.vcl)}
		}
		return nil, nil, fmt.Errorf("read VitalsCluster %s: %w", f.vcl, err)
	}
	if got := deorbit.ClusterName(own); got != f.clusterName {
		return nil, nil, &config.Error{Field: "--vitalscluster", Msg: fmt.Sprintf("VitalsCluster %s names cloud cluster %q, not --cluster-name %q", f.vcl, got, f.clusterName)}
	}
	return c, own, nil
}

// validKey reports whether s is NAMESPACE/NAME.
func validKey(s string) bool {
	ns, name, ok := strings.Cut(s, "/")
	return ok && len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0
}

// deorbitProofs says which of the operator's proofs the run could run, after its first step.
func deorbitProofs(in deorbit.Input, st *v1alpha1.DeorbitStatus, f *deorbitFlags, mgmt bool, own *v1alpha1.VitalsCluster) []DeorbitProof {
	var ps []DeorbitProof
	if sn := in.Target.SubnetID; sn != "" {
		ps = append(ps, DeorbitProof{Name: ProofSubnet, Ran: true, Note: "a load balancer is the cluster's by its name or tags only with its VIP on subnet " + sn +
			", and a route only with its nexthop in the subnet's CIDR"})
	} else {
		ps = append(ps, DeorbitProof{Name: ProofSubnet, Note: "no --subnet (nor a VitalsCluster's spec.openstack.subnetID): a load balancer is the cluster's by its name or tags on any subnet, " +
			"and a route by its destination alone, as the operator judges a cluster without subnetID; give --subnet where a neighbour may use the same names"})
	}
	switch {
	case !mgmt:
		ps = append(ps, DeorbitProof{Name: ProofNeighbours, Note: in.SweepRefused + "; the Kubernetes phases and the routes, which it does not guard, run"})
	case in.SweepRefused != "":
		ps = append(ps, DeorbitProof{Name: ProofNeighbours, Ran: true, Note: in.SweepRefused + " (the command does not wait for it to let go)"})
	case own != nil:
		ps = append(ps, DeorbitProof{Name: ProofNeighbours, Ran: true, Note: fmt.Sprintf("the sweep deletes nothing while a VitalsCluster other than %s names cloud cluster %q in the project", f.vcl, f.clusterName)})
	default:
		ps = append(ps, DeorbitProof{Name: ProofNeighbours, Ran: true, Note: fmt.Sprintf("the sweep deletes nothing while any VitalsCluster names cloud cluster %q in the project, "+
			"unless its own teardown runs (give --vitalscluster for the cluster's own)", f.clusterName)})
	}
	if seen := st.Seen; seen != nil && seen.KeepTime != nil {
		from := "read from the workload cluster"
		if own != nil && seen.KeepTime.Before(st.StartTime) {
			from = "recorded by the operator in VitalsCluster " + f.vcl
		}
		ps = append(ps, DeorbitProof{Name: ProofKeepLedger, Ran: true, Note: fmt.Sprintf("%s at %s: %d volumes and snapshots kept (Retain, or a keep marker on the PersistentVolume, its claim or the VolumeSnapshot); "+
			"a volume's Cinder metadata %s=true keeps it too", from, seen.KeepTime.UTC().Format(time.RFC3339), len(seen.Keep), v1alpha1.AnnotationKeep)})
	} else {
		ps = append(ps, DeorbitProof{Name: ProofKeepLedger, Note: "no keep ledger: the workload cluster was not read (no --kubeconfig, or unreachable) and no --vitalscluster recorded one; " +
			"only a volume's Cinder metadata " + v1alpha1.AnnotationKeep + "=true keeps it from the sweep"})
	}
	return ps
}

func printProofs(out io.Writer, ps []DeorbitProof) {
	for _, p := range ps {
		ran := "ran"
		if !p.Ran {
			ran = "not run"
		}
		fmt.Fprintf(out, "proof %s: %s: %s\n", p.Name, ran, p.Note)
	}
}

func printProgress(out io.Writer, st *v1alpha1.DeorbitStatus, elapsed time.Duration) {
	line := fmt.Sprintf("[%s] phase %s: %d done, %d remaining of %d", elapsed.Round(time.Second), st.Phase, st.Counts.Done, st.Counts.Remaining, st.Counts.Total)
	if st.NextAttemptTime != nil {
		line += fmt.Sprintf("; next look in %s", time.Until(st.NextAttemptTime.Time).Round(time.Second))
	}
	if st.LastError != "" {
		line += "; last error: " + st.LastError
	}
	fmt.Fprintln(out, line)
}

// printResources lists the resources of rs in state ("": all) as a table under title.
func printResources(out io.Writer, title string, rs []v1alpha1.DeorbitResource, state string) {
	fmt.Fprintln(out, title+":")
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tID\tNAME\tSTATUS\tNOTE")
	n := 0
	for _, r := range rs {
		if state != "" && r.State != state {
			continue
		}
		n++
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.Type, r.ID, dash(r.Name), dash(r.Status), r.LastError)
	}
	_ = tw.Flush()
	if n == 0 {
		fmt.Fprintln(out, "  (nothing)")
		return
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			fmt.Fprintln(out, strings.TrimRight(line, " \n"))
		}
	}
}

// dash is s, or "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeState(path string, st *v1alpha1.DeorbitStatus) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write --state %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write --state %s: %w", path, err)
	}
	return nil
}

// cliPolicy is the remediation policy of a run without the operator: the command itself is the
// decision to delete; --dry-run and --exclude apply, and every decision is printed.
type cliPolicy struct {
	mu      sync.Mutex
	dryRun  bool
	exclude map[string]bool
	out     io.Writer
}

func (p *cliPolicy) Ask(_ context.Context, a remediation.Action) remediation.Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.exclude[a.ID] || (a.Name != "" && p.exclude[a.Name]):
		fmt.Fprintf(p.out, "  kept %s: excluded\n", a.Object())
		return remediation.Decision{Outcome: remediation.Held, Reason: remediation.ReasonExcluded, Message: "excluded by --exclude"}
	case p.dryRun:
		return remediation.Decision{Outcome: remediation.DryRun, Reason: remediation.ReasonDryRun, Message: "dry run (--dry-run): would " + a.Verb}
	}
	return remediation.Decision{Outcome: remediation.Allowed, Reason: remediation.ReasonAllowed, Message: "allowed by the command"}
}

// Fence is the command's open fence: no shard range or leader to lose (the command is the only actor it
// knows of), so it re-checks its own --dry-run and --exclude and bounds each write by the write timeout.
func (p *cliPolicy) Fence(actions ...remediation.Action) fencing.Fence {
	return fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, a := range actions {
			if p.exclude[a.ID] || (a.Name != "" && p.exclude[a.Name]) {
				return nil, nil, &fencing.Error{Reason: fencing.ReasonExcluded, Message: a.Object() + " excluded by --exclude"}
			}
		}
		if p.dryRun {
			return nil, nil, &fencing.Error{Reason: fencing.ReasonDryRun, Message: "dry run (--dry-run)"}
		}
		ctx, cancel := context.WithTimeout(ctx, fencing.DefaultWriteTimeout)
		return ctx, cancel, nil
	})
}

func (p *cliPolicy) Done(_ context.Context, a remediation.Action, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		fmt.Fprintf(p.out, "  %s %s failed: %v\n", a.Verb, a.Object(), err)
		return
	}
	fmt.Fprintf(p.out, "  %s %s\n", a.Verb, a.Object())
}

// exitError carries its exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

// deorbitSummary says what a finished run did: the resources the cloud confirmed gone, and those it kept
// (excluded, retained): a kept volume is not gone.
func deorbitSummary(cluster string, st *v1alpha1.DeorbitStatus) string {
	gone, kept := countState(st.Resources, v1alpha1.DeorbitGone), countState(st.Resources, v1alpha1.DeorbitKept)
	note := ""
	if n := omittedNote(st); n != "" {
		note = "; " + n
	}
	if kept == 0 {
		return fmt.Sprintf("the cloud confirmed every resource of %s gone (%d)%s", cluster, gone, note)
	}
	return fmt.Sprintf("the cloud confirmed %d resource(s) of %s gone; %d kept, not deleted (below)%s", gone, cluster, kept, note)
}

// omittedNote says how many tracked resources the status leaves out (v1alpha1.MaxDeorbitResources), or "".
func omittedNote(st *v1alpha1.DeorbitStatus) string {
	om := st.ResourcesOmitted
	if om == nil {
		return ""
	}
	return fmt.Sprintf("%d more not listed (%d gone or kept, %d remaining: status.deorbit.resourcesOmitted)", om.Done+om.Remaining, om.Done, om.Remaining)
}

// countState counts the resources of rs in state.
func countState(rs []v1alpha1.DeorbitResource, state string) int {
	n := 0
	for _, r := range rs {
		if r.State == state {
			n++
		}
	}
	return n
}
