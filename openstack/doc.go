// Package openstack is Vitals' access to an OpenStack cloud: authentication (clouds.yaml with
// secure.yaml, OS_* environment variables, a Kuryr-style INI auth section), service clients for
// Identity, Networking, Compute, Block Storage and Load Balancer with a client-side rate limiter,
// request metrics and token re-authentication, and small interfaces per resource that controllers
// and checks use.
//
// Every List call returns all pages or an error: never a partial list.
package openstack
