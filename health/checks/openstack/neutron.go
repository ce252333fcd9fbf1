package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/health/checks"
	vos "github.com/vitalsproject/vitals/openstack"
)

// NeutronProbePath is the request Neutron checks send, relative to the network endpoint.
//
// Why networks?limit=1&fields=id: it is authenticated (the token passes keystonemiddleware), it goes
// through Neutron's API workers, policy engine and database like real work does (an extension or
// version listing is answered from memory and would pass with the database down), and its cost
// does not grow with the project: one indexed query with LIMIT 2 (one row and the next-page marker)
// and a response of a few dozen bytes, however many networks exist.
const NeutronProbePath = "networks?limit=1&fields=id"

// Neutron checks that Neutron answers one cheap authenticated request (NeutronProbePath).
// Default MinInterval: 5s.
func Neutron(opts Options) (checks.Func, error) {
	return opts.build("neutron", 5*time.Second, func(ctx context.Context, c *vos.Cloud) error {
		nc, err := c.Client(vos.ServiceNetworking)
		if err != nil {
			return err
		}
		url := nc.ServiceURL() + NeutronProbePath
		var body struct {
			Networks []struct {
				ID string `json:"id"`
			} `json:"networks"`
		}
		_, err = nc.Get(ctx, url, &body, &gophercloud.RequestOpts{OkCodes: []int{200}})
		if err != nil {
			return fmt.Errorf("neutron at %s: %w", nc.Endpoint, err)
		}
		if body.Networks == nil {
			return fmt.Errorf("neutron at %s: GET %s answered without a networks list", nc.Endpoint, NeutronProbePath)
		}
		return nil
	})
}
