package faultproxy_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/vitalsproject/vitals/internal/test/faultproxy"
)

// A test routes gophercloud through a Cloud and makes the second page of a Neutron list fail once.
func ExampleCloud() {
	ctx := context.Background()
	opts := gophercloud.AuthOptions{ /* from testenv.OpenStack(t).AuthOptions() */ }

	cloud, err := faultproxy.NewCloud("http://127.0.0.1:5000/v3")
	if err != nil {
		panic(err)
	}
	defer cloud.Close()
	neutron, _ := cloud.Service("http://127.0.0.1:9696")
	_ = neutron.Add(faultproxy.Rule{
		Name: "page-2-fails", Method: http.MethodGet, Path: "/v2.0/networks",
		Query:    map[string]string{"marker": ""},
		Sequence: []faultproxy.Fault{faultproxy.Status(500, faultproxy.StyleNeutron, "boom")},
	})

	opts.IdentityEndpoint = cloud.AuthURL() // the catalog in the token now points at the proxies
	pc, err := openstack.AuthenticatedClient(ctx, opts)
	if err != nil {
		panic(err)
	}
	nc, _ := openstack.NewNetworkV2(pc, gophercloud.EndpointOpts{})
	_, err = networks.List(nc, networks.ListOpts{Limit: 1}).AllPages(ctx)
	fmt.Println(err != nil, neutron.Count("page-2-fails"))
}
