package cloudsimcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/base/bounded"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

// Main runs vitals-cloudsim with args (without the program name) until SIGINT or SIGTERM and returns the
// process exit code (clirun.ExitConfig for bad flags or a bad seed file).
func Main(args []string, stdout, stderr io.Writer) int {
	return clirun.Run(NewCommand(stdout, stderr), args, stderr)
}

type cloudsimOptions struct {
	listen        string
	state         string
	seed          uint64
	seedFile      string
	demo          bool
	adminUser     string
	adminPassword string
	adminProject  string
	region        string
	publicURL     string
	tokenTTL      time.Duration
	maxRoutes     int
	deleteLatency time.Duration
	saveInterval  time.Duration
	requestLog    string
	log           *clirun.LogFlags
}

// cloudsimSeedFile is the --seed-file format: projects with their resources, and clusters.
type cloudsimSeedFile struct {
	Projects []cloudsim.ProjectSeed `json:"projects"`
	Clusters []cloudsim.ClusterSeed `json:"clusters"`
}

// NewCommand builds the vitals-cloudsim command, writing to stdout and stderr.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &cloudsimOptions{}
	cmd := &cobra.Command{
		Use:   "vitals-cloudsim --listen ADDR [--state FILE] [--seed N] [--seed-file FILE] [--demo]",
		Short: "Run the OpenStack simulator (Keystone, Neutron, Nova, Cinder, Octavia) on one address",
		Long: `Run the in-memory OpenStack simulator used by tests, benchmarks and the demo.
One address serves Keystone v3 (<url>/v3, the auth URL), Neutron, Nova, Cinder and Octavia, with a
catalog that points at that address, and the simulator's admin API under /_sim/ (knobs, faults,
seeding, save). An admin user is created at start and the matching OS_* variables are printed on
stdout. --state keeps the state in a JSON file across restarts (saved on exit and every
--save-interval); --seed makes IDs repeatable; --seed-file (YAML or JSON: projects, clusters)
and --demo create resources at start. See docs/cloudsim.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCloudsim(cmd, o) },
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8780", "listen address host:port (port 0 picks a free one)")
	f.StringVar(&o.state, "state", "", "JSON state file: loaded at start if present, saved on exit and periodically")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the random source for IDs (0: from the clock)")
	f.StringVar(&o.seedFile, "seed-file", "", "YAML or JSON file with projects and clusters to create at start")
	f.BoolVar(&o.demo, "demo", false, "create the demo project: a cluster whose router has live, orphaned and foreign routes")
	f.StringVar(&o.adminUser, "admin-user", "admin", "name of the admin user created at start")
	f.StringVar(&o.adminPassword, "admin-password", "admin", "password of the admin user")
	f.StringVar(&o.adminProject, "admin-project", "admin", "project of the admin user")
	f.StringVar(&o.region, "region", "RegionOne", "region name in the catalog")
	f.StringVar(&o.publicURL, "public-url", "", "base URL written in the catalog (default: http://<listen address>)")
	f.DurationVar(&o.tokenTTL, "token-ttl", time.Hour, "lifetime of issued tokens")
	f.IntVar(&o.maxRoutes, "max-routes", 30, "Neutron max_routes: more routes on a router answer 400 RoutesExhausted")
	f.DurationVar(&o.deleteLatency, "delete-latency", 0, "how long Nova, Cinder and Octavia take to delete a server, volume or load balancer (each has its own knob under /_sim/knobs)")
	f.DurationVar(&o.saveInterval, "save-interval", time.Minute, "how often to save the state with --state")
	f.StringVar(&o.requestLog, "request-log", "", "append a JSON line per API call to this file (time, method, path, status, project, user agent, fault)")
	o.log = clirun.AddLogFlags(cmd, "text")
	clirun.CompleteFiles(cmd, "state", "json")
	clirun.CompleteFiles(cmd, "request-log", "jsonl", "json")
	clirun.CompleteFiles(cmd, "seed-file", "yaml", "yml", "json")
	return cmd
}

func runCloudsim(cmd *cobra.Command, o *cloudsimOptions) error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return clirun.Usagef("--listen: expected host:port, got %q", o.listen)
	}
	if o.tokenTTL <= 0 {
		return clirun.Usagef("--token-ttl: expected a positive duration, got %s", o.tokenTTL)
	}
	if o.maxRoutes < 0 {
		return clirun.Usagef("--max-routes: expected 0 or more, got %d", o.maxRoutes)
	}
	if o.deleteLatency < 0 {
		return clirun.Usagef("--delete-latency: expected 0 or a positive duration, got %s", o.deleteLatency)
	}
	if o.saveInterval <= 0 {
		return clirun.Usagef("--save-interval: expected a positive duration, got %s", o.saveInterval)
	}
	if o.adminUser == "" || o.adminProject == "" {
		return clirun.Usagef("--admin-user and --admin-project must not be empty")
	}
	log, err := o.log.Logger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	var seeds *cloudsimSeedFile
	if o.seedFile != "" {
		if seeds, err = loadCloudsimSeeds(o.seedFile); err != nil {
			return err
		}
	}
	knobs := cloudsim.DefaultKnobs()
	knobs.TokenTTL = cloudsim.Duration(o.tokenTTL)
	knobs.MaxRoutes = o.maxRoutes
	setDeleteLatency(&knobs, o.deleteLatency)
	var reqLog io.Writer
	if o.requestLog != "" {
		f, err := os.OpenFile(o.requestLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return &config.Error{File: o.requestLog, Field: "--request-log", Msg: err.Error()}
		}
		defer func() { _ = f.Close() }()
		reqLog = f
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: o.seed, Logger: log, Region: o.region, PublicURL: o.publicURL,
		Knobs: &knobs, StatePath: o.state, SaveInterval: o.saveInterval, RequestLog: reqLog})
	if err != nil {
		return err
	}
	// A loaded state keeps its knobs; flags given explicitly still win.
	if o.state != "" {
		if err := sim.UpdateKnobs(func(k *cloudsim.Knobs) {
			if cmd.Flags().Changed("token-ttl") {
				k.TokenTTL = cloudsim.Duration(o.tokenTTL)
			}
			if cmd.Flags().Changed("max-routes") {
				k.MaxRoutes = o.maxRoutes
			}
			if cmd.Flags().Changed("delete-latency") {
				setDeleteLatency(k, o.deleteLatency)
			}
		}); err != nil {
			return err
		}
	}
	if _, ok := sim.ProjectID(o.adminProject); !ok {
		pid := sim.CreateProject(o.adminProject)
		if _, err := sim.CreateUser(o.adminUser, o.adminPassword, true, pid); err != nil {
			return fmt.Errorf("cloudsim: create admin user: %w", err)
		}
	}
	if seeds != nil {
		if _, err := sim.Seed(cloudsim.SeedSpec{Projects: seeds.Projects}); err != nil {
			return &config.Error{File: o.seedFile, Field: "projects", Msg: err.Error()}
		}
		for i, c := range seeds.Clusters {
			if _, err := sim.SeedCluster(c); err != nil {
				return &config.Error{File: o.seedFile, Field: fmt.Sprintf("clusters[%d]", i), Msg: err.Error()}
			}
		}
	}
	var demo *cloudsim.SeededCluster
	if o.demo {
		var err error
		if demo, err = seedCloudsimDemo(sim); err != nil {
			return err
		}
	}
	ctx := cmd.Context()
	// The server outlives ctx until Close below has saved the state once.
	if err := sim.Start(context.WithoutCancel(ctx), o.listen); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "export OS_AUTH_URL=%s\nexport OS_USERNAME=%s\nexport OS_PASSWORD=%s\nexport OS_PROJECT_NAME=%s\n"+
		"export OS_USER_DOMAIN_NAME=Default\nexport OS_PROJECT_DOMAIN_NAME=Default\nexport OS_DOMAIN_NAME=Default\n"+
		"export OS_REGION_NAME=%s\n", sim.AuthURL(), o.adminUser, o.adminPassword, o.adminProject, o.region)
	if demo != nil {
		// The demo's cluster, for the demo script: its node network and its servers (ID=name).
		servers := make([]string, 0, len(demo.Nodes))
		for _, n := range demo.Nodes {
			servers = append(servers, n.ID+"="+n.Name)
		}
		fmt.Fprintf(out, "export DEMO_NETWORK_ID=%s\nexport DEMO_SERVERS='%s'\n", demo.NetworkID, strings.Join(servers, " "))
	}
	<-ctx.Done()
	log.Info("cloudsim stopping")
	if err := sim.Close(); err != nil {
		return err
	}
	return nil
}

// setDeleteLatency sets the delete latency of every service that deletes asynchronously.
func setDeleteLatency(k *cloudsim.Knobs, d time.Duration) {
	k.ServerDeleteLatency = cloudsim.Duration(d)
	k.VolumeDeleteLatency = cloudsim.Duration(d)
	k.LBDeleteLatency = cloudsim.Duration(d)
}

// maxSeedFile bounds a --seed-file (projects, networks and servers to start with).
const maxSeedFile = 64 << 20

func loadCloudsimSeeds(path string) (*cloudsimSeedFile, error) {
	b, err := bounded.ReadFile(context.Background(), path, maxSeedFile)
	if err != nil {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("cannot read: %v", err), Err: err}
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("expected YAML or JSON: %v", err)}
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var f cloudsimSeedFile
	if err := dec.Decode(&f); err != nil {
		field := ""
		msg := err.Error()
		if i := strings.Index(msg, "unknown field "); i >= 0 {
			field = strings.Trim(msg[i+len("unknown field "):], `"`)
			msg = "unknown field; expected projects[] (name, users, networks, security_groups, routers, servers, volumes, load_balancers, quota, application_credentials) or clusters[] (project, name, nodes, node_cidr, pod_cidr, orphaned_routes, foreign_routes, volumes, load_balancers)"
		}
		return nil, &config.Error{File: path, Field: field, Msg: msg}
	}
	for i, p := range f.Projects {
		if p.Name == "" {
			return nil, &config.Error{File: path, Field: fmt.Sprintf("projects[%d].name", i), Msg: "required"}
		}
	}
	for i, c := range f.Clusters {
		if c.Name == "" || c.Project == "" {
			return nil, &config.Error{File: path, Field: fmt.Sprintf("clusters[%d]", i), Msg: "name and project are required"}
		}
	}
	return &f, nil
}

// seedCloudsimDemo creates the demo project "demo" (user demo, password demo) with one cluster, and returns
// what it made (nil when the project was loaded from --state).
func seedCloudsimDemo(sim *cloudsim.Sim) (*cloudsim.SeededCluster, error) {
	if _, ok := sim.ProjectID("demo"); ok {
		return nil, nil // loaded from --state
	}
	pid := sim.CreateProject("demo")
	if _, err := sim.CreateUser("demo", "demo", false, pid); err != nil {
		return nil, fmt.Errorf("cloudsim demo: %w", err)
	}
	c, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "demo", Name: "demo", Nodes: 5, OrphanedRoutes: 3,
		ForeignRoutes: 2, Volumes: 3, LoadBalancers: 2})
	if err != nil {
		return nil, fmt.Errorf("cloudsim demo: %w", err)
	}
	return c, nil
}

// CheckSeedFile reads a seed file (--seed-file) and reports what is wrong with it, as the simulator
// would at start: for the documentation's examples.
func CheckSeedFile(path string) error {
	_, err := loadCloudsimSeeds(path)
	return err
}
