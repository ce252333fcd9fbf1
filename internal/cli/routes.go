package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/routes"
)

func newRoutesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "Inspect the static routes of Neutron routers",
	}
	cmd.AddCommand(newRoutesAuditCommand())
	return cmd
}

type routesAuditFlags struct {
	router   string
	podCIDRs []string
	cloud    string
	project  string
	subnet   string
	protect  []string
	sources  []string
	timeout  time.Duration
	output   string
	exitCode bool
}

// ExitOrphaned is the exit code of `vitals routes audit --exit-code` when a route is orphaned.
const ExitOrphaned = 3

func newRoutesAuditCommand() *cobra.Command {
	f := &routesAuditFlags{}
	cmd := &cobra.Command{
		Use:   "audit --router ID --pod-cidr CIDR",
		Short: "Print the route collector's analysis of one router as a table; changes nothing",
		Long: `Read one router's routes and every port (and server) of the project, and print what the route
collector (the operator's routegc controller) would decide for each route:

  foreign    destination outside the pod CIDRs: never touched
  protected  on the --protect list: never touched
  live       the nexthop is an address of a port or server of the project
  orphaned   the nexthop is held by nothing: the operator removes such a route once two passes,
             one interval apart, saw it orphaned
  invalid    does not parse: never touched

With -o json or -o yaml the same analysis is printed as data (router, sources, routes with their
verdicts, counts) for scripts.

Credentials: --os-cloud (clouds.yaml) or OS_CLOUD, else OS_* variables. Exit codes: 0 the router was
read (orphaned routes or not; with --exit-code, none orphaned); 1 the reads failed or look incomplete;
2 bad flags; 3 with --exit-code, a route is orphaned (for scripts and CI, as git diff --exit-code).`,
		Example: "  vitals routes audit --router r1 --pod-cidr 198.19.0.0/16\n" +
			"  vitals routes audit --os-cloud prod --router prod-eu --pod-cidr 198.19.0.0/16 --exit-code -o json > audit.json\n" +
			"  vitals routes audit --router r1 --pod-cidr 198.19.0.0/16 -o json | jq '.routes[] | select(.verdict == \"orphaned\")'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.router, "router", "", "the router, by its ID or a name unique in the project (required)")
	fl.StringSliceVar(&f.podCIDRs, "pod-cidr", nil, "pod CIDR of the cluster (repeatable; required)")
	addCloudFlag(cmd, &f.cloud, "cloud of clouds.yaml (default: OS_CLOUD, else OS_* variables)")
	fl.StringVar(&f.project, "project", "", "project whose ports and servers hold live nexthops (default: the credentials' project)")
	fl.StringVar(&f.subnet, "subnet", "", "ID of the nodes' subnet (optional sanity check)")
	fl.StringSliceVar(&f.protect, "protect", nil, "protected route DESTINATION[@NEXTHOP] (repeatable)")
	fl.StringSliceVar(&f.sources, "sources", []string{"ports", "servers"}, "address sources: ports and/or servers")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "time limit of the reads")
	fl.BoolVar(&f.exitCode, "exit-code", false, "exit with 3 when a route is orphaned (default: 0 whatever the verdicts)")
	clirun.AddOutputFlag(cmd, &f.output)
	clirun.CompleteValues(cmd, "sources", "ports", "servers")
	return cmd
}

func (f *routesAuditFlags) run(ctx context.Context, cmd *cobra.Command) error {
	if err := clirun.CheckOutput(f.output); err != nil {
		return err
	}
	if f.router == "" {
		return clirun.Usagef("--router is required")
	}
	if len(f.podCIDRs) == 0 {
		return clirun.Usagef("--pod-cidr is required (the cluster's pod network, e.g. 198.19.0.0/16)")
	}
	pods, err := parsePodCIDRs(f.podCIDRs)
	if err != nil {
		return err
	}
	protected, err := parseProtect(f.protect)
	if err != nil {
		return err
	}
	ro := routes.ReadOptions{RouterID: f.router, ProjectID: f.project, SubnetID: f.subnet}
	for _, s := range f.sources {
		switch s {
		case "ports":
			ro.Ports = true
		case "servers":
			ro.Servers = true
		default:
			return &config.Error{Field: "--sources", Msg: fmt.Sprintf("expected ports and/or servers, got %q", s)}
		}
	}
	auth, err := cliAuth(f.cloud)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	cloud, err := openstack.Connect(ctx, openstack.Config{Auth: auth})
	if err != nil {
		return err
	}
	if ro.ProjectID == "" {
		ro.ProjectID = cloud.ProjectID()
	}
	if ro.RouterID, err = resolveRouter(ctx, cloud, f.router, ro.ProjectID); err != nil {
		return err
	}
	snap, err := routes.Read(ctx, cloud, ro)
	if err != nil {
		return err
	}
	plan, aerr := routes.Analyze(routes.Input{
		Routes: snap.Router.Routes, PodCIDRs: pods, Protected: protected, Live: snap.Live, Sources: snap.Sources,
		Now: time.Now(),
	})
	if err := WriteRouteAudit(cmd.OutOrStdout(), f.output, snap, plan); err != nil {
		return err
	}
	if aerr != nil {
		return aerr
	}
	if f.exitCode && plan.Counts.Orphaned > 0 {
		return exitError{code: ExitOrphaned, err: fmt.Errorf("router %s: %d orphaned route(s) in the pod CIDRs (--exit-code)", snap.Router.ID, plan.Counts.Orphaned)}
	}
	return nil
}

// resolveRouter accepts a router ID or a name unique in the project.
func resolveRouter(ctx context.Context, cloud *openstack.Cloud, idOrName, project string) (string, error) {
	_, err := cloud.GetRouter(ctx, idOrName)
	if err == nil {
		return idOrName, nil
	}
	if !openstack.IsNotFound(err) {
		return "", err
	}
	rs, lerr := cloud.ListRouters(ctx, openstack.ListOpts{Name: idOrName, ProjectID: project})
	if lerr != nil {
		return "", fmt.Errorf("router %q: not an ID (%v), and listing by name failed: %w", idOrName, err, lerr)
	}
	switch len(rs) {
	case 1:
		return rs[0].ID, nil
	case 0:
		return "", fmt.Errorf("router %q: no router with this ID or name in project %s", idOrName, project)
	}
	return "", fmt.Errorf("router %q: %d routers have this name in project %s; give the ID", idOrName, len(rs), project)
}

// RouteAudit is the analysis of one router as -o json and -o yaml print it.
type RouteAudit struct {
	Router  AuditRouter   `json:"router"`
	Sources []AuditSource `json:"sources"`
	Routes  []AuditRoute  `json:"routes"`
	Counts  AuditCounts   `json:"counts"`
}

// AuditRouter names the router read.
type AuditRouter struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Revision int    `json:"revision"`
}

// AuditSource is an address source and how many items (ports, servers) it read.
type AuditSource struct {
	Name  string `json:"name"`
	Items int    `json:"items"`
}

// AuditRoute is one route and its verdict: foreign, protected, live, orphaned or invalid.
type AuditRoute struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
	Verdict     string `json:"verdict"`
	Detail      string `json:"detail,omitempty"`
}

// AuditCounts sums the verdicts.
type AuditCounts struct {
	Routes    int `json:"routes"`
	Ours      int `json:"inPodCIDRs"`
	Live      int `json:"live"`
	Orphaned  int `json:"orphaned"`
	Protected int `json:"protected"`
	Foreign   int `json:"foreign"`
	Invalid   int `json:"invalid"`
}

// NewRouteAudit turns a read and its analysis into a RouteAudit.
func NewRouteAudit(snap *routes.Snapshot, plan routes.Plan) RouteAudit {
	a := RouteAudit{
		Router:  AuditRouter{ID: snap.Router.ID, Name: snap.Router.Name, Revision: snap.Router.RevisionNumber},
		Sources: []AuditSource{},
		Routes:  []AuditRoute{},
	}
	for _, s := range snap.Sources {
		a.Sources = append(a.Sources, AuditSource{Name: s.Name, Items: s.Items})
	}
	for _, r := range plan.Results {
		v, detail := string(r.Verdict), r.Detail
		if r.Verdict == routes.Suspect {
			v, detail = "orphaned", "nexthop held by no port or server"
		}
		a.Routes = append(a.Routes, AuditRoute{Destination: r.Route.Destination, NextHop: r.Route.NextHop, Verdict: v, Detail: detail})
	}
	c := plan.Counts
	a.Counts = AuditCounts{Routes: c.Routes, Ours: c.Ours, Live: c.Live, Orphaned: c.Orphaned, Protected: c.Protected, Foreign: c.Foreign, Invalid: c.Invalid}
	return a
}

// WriteRouteAudit prints an analysis as a table with a summary line (text), or as a RouteAudit (json, yaml).
func WriteRouteAudit(w io.Writer, output string, snap *routes.Snapshot, plan routes.Plan) error {
	a := NewRouteAudit(snap, plan)
	return clirun.WriteOutput(w, output, a, func() error {
		fmt.Fprintf(w, "router %s (%s), revision %d, %d routes; sources:", a.Router.ID, a.Router.Name, a.Router.Revision, len(a.Routes))
		for _, s := range a.Sources {
			fmt.Fprintf(w, " %s=%d", s.Name, s.Items)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DESTINATION\tNEXTHOP\tVERDICT\tDETAIL")
		for _, r := range a.Routes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Destination, r.NextHop, r.Verdict, r.Detail)
		}
		tw.Flush()
		c := a.Counts
		_, err := fmt.Fprintf(w, "%d routes: %d in the pod CIDRs (%d live, %d orphaned, %d protected), %d foreign, %d invalid\n",
			c.Routes, c.Ours, c.Live, c.Orphaned, c.Protected, c.Foreign, c.Invalid)
		return err
	})
}

// parsePodCIDRs reads --pod-cidr values: networks, refused with host bits set (198.19.0.1/16 is a typo
// for 198.19.0.0/16 or for a host route, and the routes a command judges or removes depend on which).
func parsePodCIDRs(list []string) ([]netip.Prefix, error) {
	for _, s := range list {
		if p, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil && p.Masked() != p {
			return nil, &config.Error{Field: "--pod-cidr", Msg: fmt.Sprintf("%s has host bits set: expected the network %s (as spec.podCIDRs, which the API server checks the same way)", s, p.Masked())}
		}
	}
	pods, err := routes.ParsePrefixes(list)
	if err != nil {
		return nil, &config.Error{Field: "--pod-cidr", Msg: err.Error()}
	}
	return pods, nil
}

// cliAuth finds OpenStack credentials for a one-shot command: --cloud or OS_CLOUD, else OS_*.
func cliAuth(cloud string) (openstack.Auth, error) {
	a, err := openstack.PickAuth(openstack.AuthSources{Cloud: cloud})
	if errors.Is(err, openstack.ErrNoCredentials) {
		return a, &config.Error{Field: "--os-cloud", Msg: "no OpenStack credentials: give --os-cloud (a cloud of clouds.yaml: OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/ or /etc/openstack/), OS_CLOUD, or OS_AUTH_URL and the other OS_* variables (an openrc file)"}
	}
	return a, err
}

// completeClouds makes the flags names of cmd complete the clouds of the clouds.yaml that --cloud
// would read (OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack, /etc/openstack).
func completeClouds(cmd *cobra.Command, names ...string) {
	for _, name := range names {
		clirun.Must(cmd, name, cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			clouds, err := openstack.CloudNames(openstack.CloudsYAMLOptions{})
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return clouds, cobra.ShellCompDirectiveNoFileComp
		}))
	}
}

// parseProtect reads --protect values (DESTINATION[@NEXTHOP]) of routes and deorbit.
func parseProtect(list []string) ([]routes.ProtectedRoute, error) {
	var protected []routes.ProtectedRoute
	for _, p := range list {
		bad := &config.Error{Field: "--protect", Msg: fmt.Sprintf("expected DESTINATION[@NEXTHOP] such as 198.19.7.0/24@10.0.0.5, got %q", p)}
		dst, hop, _ := strings.Cut(p, "@")
		var pr routes.ProtectedRoute
		var err error
		if pr.Destination, err = netip.ParsePrefix(dst); err != nil {
			return nil, bad
		}
		pr.Destination = pr.Destination.Masked()
		if hop != "" {
			if pr.NextHop, err = netip.ParseAddr(hop); err != nil {
				return nil, bad
			}
			pr.NextHop = pr.NextHop.Unmap()
		}
		protected = append(protected, pr)
	}
	return protected, nil
}
