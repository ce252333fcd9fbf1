package openstack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
	vos "github.com/vitalsproject/vitals/openstack"
)

// DefaultMaxRoutes is the route count per router that QuotaHeadroom compares against. Neutron's
// limit (max_routes, 30 by default) is a server setting that the API does not expose; a router
// with more routes than it allows refuses new ones (Kubernikus met this as a 31-route limit).
const DefaultMaxRoutes = 30

// QuotaOptions configure QuotaHeadroom.
type QuotaOptions struct {
	Options
	// Threshold is the fraction of a quota whose use fails the check (0: 0.8). Usage counts
	// reserved resources too.
	Threshold float64
	// MaxRoutes per router (0: DefaultMaxRoutes): set it to Neutron's max_routes.
	MaxRoutes int
	// ProjectID whose quota is read ("": the token's project).
	ProjectID string
	// Routers filters the routers whose route count is checked (zero: every router of the project).
	Routers vos.ListOpts
}

// watchedQuotas are the Neutron resources QuotaHeadroom watches, with the names its messages give them.
var watchedQuotas = map[string]string{"port": "ports", "subnet": "subnets", "network": "networks", "security_group": "security groups"}

// QuotaHeadroom fails when the project uses more than Threshold of its Neutron quota of ports,
// subnets, networks or security groups (the four resources Kuryr's readiness watched), or when a
// router holds more than Threshold of MaxRoutes routes. Register it with health.Degraded to warn
// before creation starts failing, or as critical where running out must stop the service from
// taking work. A failed read fails the check too. It reads the quota details (one request) and the
// project's routers (all pages), so its default MinInterval is 60s.
func QuotaHeadroom(opts QuotaOptions) (checks.Func, error) {
	switch {
	case opts.Threshold < 0 || opts.Threshold > 1:
		return nil, fmt.Errorf("quota headroom check: Threshold %g: expected a fraction from 0 (the default, 0.8) to 1", opts.Threshold)
	case opts.MaxRoutes < 0:
		return nil, fmt.Errorf("quota headroom check: MaxRoutes %d: expected 0 (the default, %d) or more", opts.MaxRoutes, DefaultMaxRoutes)
	}
	if opts.Threshold <= 0 {
		opts.Threshold = 0.8
	}
	if opts.MaxRoutes <= 0 {
		opts.MaxRoutes = DefaultMaxRoutes
	}
	return opts.build("quota headroom", 60*time.Second, func(ctx context.Context, c *vos.Cloud) error {
		project := opts.ProjectID
		if project == "" {
			project = c.ProjectID()
		}
		if project == "" {
			return errors.New("quota headroom: no project: the token is not project-scoped and no project was configured")
		}
		qs, err := c.Quotas(ctx, vos.ServiceNetworking, project)
		if err != nil {
			return err
		}
		var over []string
		for _, q := range qs {
			name, watched := watchedQuotas[q.Resource]
			if !watched {
				continue
			}
			if msg := overQuota(name, q.Used+q.Reserved, q.Limit, opts.Threshold); msg != "" {
				over = append(over, msg)
			}
		}
		ro := opts.Routers
		if ro.ProjectID == "" {
			ro.ProjectID = project
		}
		routers, err := c.ListRouters(ctx, ro)
		if err != nil {
			return fmt.Errorf("quota headroom: %w", err)
		}
		for _, r := range routers {
			if msg := overQuota(fmt.Sprintf("routes of router %s (%s)", r.ID, r.Name), len(r.Routes), opts.MaxRoutes, opts.Threshold); msg != "" {
				over = append(over, msg)
			}
		}
		if len(over) > 0 {
			return fmt.Errorf("project %s near its limits: %s", project, strings.Join(over, "; "))
		}
		return nil
	})
}

// overQuota describes used/limit when it passes threshold; "" otherwise (and for unlimited, -1).
func overQuota(what string, used, limit int, threshold float64) string {
	if limit < 0 {
		return ""
	}
	if limit == 0 {
		if used > 0 {
			return fmt.Sprintf("%s %d/0", what, used)
		}
		return ""
	}
	if float64(used) > threshold*float64(limit) {
		return fmt.Sprintf("%s %d/%d (%.0f%% > %.0f%%)", what, used, limit, 100*float64(used)/float64(limit), 100*threshold)
	}
	return ""
}
