package main

import (
	"context"
	"fmt"

	"github.com/vitalsproject/vitals/openstack"
)

// orphanRoute is the route the change adds: inside every cluster's pod CIDR (198.19.0.0/16), pointing at an
// address of the node network (10.180.0.0/24) where no port lives: an orphan the route collector is to
// find, prove on its next pass and remove.
var orphanRoute = openstack.Route{Destination: "198.19.200.0/24", NextHop: "10.180.0.200"}

// orphanRoutes adds orphanRoute to the routers of the clusters 0..k-1 (spread over the fleet: every
// n/k-th), through the simulator's Neutron API as its admin, and returns the clusters changed.
func orphanRoutes(ctx context.Context, simURL string, routers []string, k, workers int) ([]string, error) {
	auth, err := openstack.AuthFromEnv(func(k string) string { return adminEnv(simURL)[k] })
	if err != nil {
		return nil, err
	}
	cloud, err := openstack.Connect(ctx, openstack.Config{Auth: auth, QPS: -1})
	if err != nil {
		return nil, fmt.Errorf("connect to the simulator as its admin: %w", err)
	}
	n := len(routers)
	k = min(k, n)
	picked := make([]int, k)
	for i := range k {
		picked[i] = i * n / k
	}
	names := make([]string, k)
	err = parallel(ctx, workers, k, func(j int) error {
		i := picked[j]
		names[j] = clusterName(i)
		if _, err := cloud.AddRoutes(ctx, routers[i], []openstack.Route{orphanRoute}); err != nil {
			return fmt.Errorf("orphan a route of cluster %s: %w", clusterName(i), err)
		}
		return nil
	})
	return names, err
}

// adminEnv are the OpenStack credentials of the simulator's admin, as OS_* variables.
func adminEnv(simURL string) map[string]string {
	return map[string]string{"OS_AUTH_URL": simURL + "/v3", "OS_USERNAME": "admin", "OS_PASSWORD": "admin", "OS_PROJECT_NAME": "admin",
		"OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": "RegionOne"}
}
