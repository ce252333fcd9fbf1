// Package errbody is the one table of the error bodies that OpenStack services (Keystone, Neutron, Nova,
// Cinder, Octavia) and the kube-apiserver answer, as their clients (gophercloud, client-go) parse them. The
// simulator (internal/test/cloudsim) answers its errors with it and the fault proxy (internal/test/faultproxy) injects
// them with it, so that an error looks the same whichever of the two produced it, and like the real service's.
package errbody
