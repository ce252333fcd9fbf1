package rbac

import (
	"cmp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The callers of the workload cluster's API, as the docs' table names them.
const (
	// CallerAccess is the workload access itself (package workload, the access controller): its health probe and the
	// REST mapper's discovery, for every controller that reads the cluster.
	CallerAccess    = "access"
	CallerFlight    = "flight"
	CallerCloudHeal = "cloudheal"
	CallerDeorbit   = "deorbit"
	CallerRemediate = "remediate"
	// CallerCredentials is the access controller's check of the workload cluster's consumer Secrets
	// (spec.workloadCredentials): off with spec.workloadCredentials.enabled false.
	CallerCredentials = "credentials"
	// CallerDoctor is vitals doctor's workload check, with the VitalsCluster's own kubeconfig.
	CallerDoctor = "vitals doctor"
)

// Callers are the callers in the docs' order.
var Callers = []string{CallerAccess, CallerFlight, CallerCloudHeal, CallerDeorbit, CallerRemediate, CallerCredentials, CallerDoctor}

// Permission is one kind of call a caller makes against a workload cluster.
type Permission struct {
	Caller string
	// Group is the API group ("" the core group); Resource the plural resource, "nodes/status" for a
	// subresource. URL is a non-resource URL instead ("/readyz", "/apis/*").
	Group, Resource, URL string
	Verbs                []string
	// Namespace confines the call to one namespace; "" is every namespace (or a cluster-scoped resource).
	Namespace string
	// Why names the call site.
	Why string
}

// Permissions is every call the operator makes against a workload cluster. The informers (Reader) list and
// watch; Client reads uncached (list, get) and writes.
var Permissions = []Permission{
	{Caller: CallerAccess, URL: "/readyz", Verbs: []string{"get"}, Why: "workload: the access's health probe"},
	{Caller: CallerAccess, URL: "/api", Verbs: []string{"get"}, Why: "workload: the REST mapper's discovery"},
	{Caller: CallerAccess, URL: "/api/*", Verbs: []string{"get"}, Why: "workload: the REST mapper's discovery"},
	{Caller: CallerAccess, URL: "/apis", Verbs: []string{"get"}, Why: "workload: the REST mapper's discovery"},
	{Caller: CallerAccess, URL: "/apis/*", Verbs: []string{"get"}, Why: "workload: the REST mapper's discovery"},

	{Caller: CallerFlight, Resource: "nodes", Verbs: []string{"list", "watch"}, Why: "flight.Read: the Nodes' informer"},
	{Caller: CallerFlight, Resource: "nodes", Verbs: []string{"list"}, Why: "nodes.Recheck: the Nodes again, uncached, before each node step"},
	{Caller: CallerFlight, Resource: "nodes", Verbs: []string{"get", "update"}, Why: "nodes.Taint: the out-of-service taint, on and off"},
	{Caller: CallerFlight, Resource: "nodes", Verbs: []string{"patch"}, Why: "nodes.Cordon (cordon, uncordon), nodes.Unrequest (the remediate-node annotation off)"},
	{Caller: CallerFlight, Resource: "nodes/status", Verbs: []string{"patch"}, Why: "nodes.WriteCondition: DrainInProgress, Drained, PodRouteDuplicate"},
	{Caller: CallerFlight, Resource: "pods", Verbs: []string{"list"}, Why: "nodes.NodePods (field selector spec.nodeName, every namespace), nodes.EtcdPods (quorum)"},
	{Caller: CallerFlight, Resource: "pods/eviction", Verbs: []string{"create"}, Why: "nodes.Drain: the drain's evictions"},
	{Caller: CallerFlight, Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"list"}, Why: "nodes.Budgets: the budgets that hold a drain, in the pods' namespaces"},
	{Caller: CallerFlight, Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"list"}, Namespace: "kube-node-lease", Why: "flight.Read: the node Leases, uncached (LeaseOutage)"},

	{Caller: CallerCloudHeal, Resource: "nodes", Verbs: []string{"list", "watch"}, Why: "cloudheal.Read: the Nodes' informer"},
	{Caller: CallerCloudHeal, Resource: "nodes", Verbs: []string{"list"}, Why: "staleAttachments: the Nodes again, uncached, before a removal"},
	{Caller: CallerCloudHeal, Resource: "persistentvolumes", Verbs: []string{"list", "watch"}, Why: "cloudheal.Read: the PersistentVolumes' informer"},
	{Caller: CallerCloudHeal, Resource: "services", Verbs: []string{"list", "watch"}, Why: "cloudheal.Read: the Services' informer (LoadBalancer Services)"},
	{Caller: CallerCloudHeal, Resource: "events", Verbs: []string{"create"}, Why: "workloadEvent: on a PersistentVolume (namespace default), on a Service (its namespace)"},

	{Caller: CallerDeorbit, Resource: "persistentvolumes", Verbs: []string{"list"}, Why: "deorbit.KeepLedger, the claims phase"},
	{Caller: CallerDeorbit, Resource: "persistentvolumeclaims", Verbs: []string{"list", "delete"}, Why: "deorbit.KeepLedger, the claims phase"},
	{Caller: CallerDeorbit, Resource: "services", Verbs: []string{"list", "delete"}, Why: "the services phase: LoadBalancer Services"},
	{Caller: CallerDeorbit, Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots", Verbs: []string{"list", "delete"}, Why: "deorbit.KeepLedger, the snapshots phase"},
	{Caller: CallerDeorbit, Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotcontents", Verbs: []string{"list"}, Why: "deorbit.KeepLedger: the Cinder snapshots of the kept VolumeSnapshots"},

	{Caller: CallerRemediate, Resource: "nodes", Verbs: []string{"list", "watch"}, Why: "remediate's quorum: the Nodes' informer"},
	{Caller: CallerRemediate, Resource: "nodes", Verbs: []string{"list"}, Why: "nodes.Recheck: the Nodes again, uncached, before a reboot"},
	{Caller: CallerRemediate, Resource: "pods", Verbs: []string{"list"}, Namespace: "kube-system", Why: "nodes.EtcdPods: etcd's pods (quorum)"},
	{Caller: CallerRemediate, Resource: "nodes", Verbs: []string{"get"}, Why: "remediate.drain, remediate.uncordon: the Machine's Node, uncached"},
	{Caller: CallerRemediate, Resource: "nodes", Verbs: []string{"patch"}, Why: "nodes.Cordon: the cordon before a reboot, and the uncordon"},
	{Caller: CallerRemediate, Resource: "nodes/status", Verbs: []string{"patch"}, Why: "nodes.WriteCondition: DrainInProgress, Drained"},
	{Caller: CallerRemediate, Resource: "pods", Verbs: []string{"list"}, Why: "nodes.NodePods (field selector spec.nodeName, every namespace)"},
	{Caller: CallerRemediate, Resource: "pods/eviction", Verbs: []string{"create"}, Why: "nodes.Drain: the drain's evictions before a reboot"},
	{Caller: CallerRemediate, Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"list"}, Why: "nodes.Budgets: the budgets that hold a drain, in the pods' namespaces"},

	{Caller: CallerCredentials, Resource: "secrets", Verbs: []string{"get"}, Namespace: "kube-system", Why: "access.checkSecret: the consumers' Secrets (cloud-config, cinder-csi-cloud-config), single GETs"},
	{Caller: CallerCredentials, Resource: "pods", Verbs: []string{"list"}, Namespace: "kube-system", Why: "access.judgeConsumers: the pods that use a Secret after its change"},

	{Caller: CallerDoctor, Resource: "nodes", Verbs: []string{"list"}, Why: "vitals doctor's workload check"},
}

// Access is one verb on one resource (or URL), in one namespace ("" every namespace).
type Access struct {
	Namespace, Group, Resource, URL, Verb string
}

func (a Access) String() string {
	s := a.Name() + " " + a.Verb
	if a.Namespace != "" {
		s += " (namespace " + a.Namespace + ")"
	}
	return s
}

// Name is the URL, or the resource as kubectl names it: resource[.group][/subresource] ("pods/eviction",
// "leases.coordination.k8s.io").
func (a Access) Name() string {
	if a.URL != "" {
		return a.URL
	}
	res, sub, _ := strings.Cut(a.Resource, "/")
	if a.Group != "" {
		res += "." + a.Group
	}
	if sub != "" {
		res += "/" + sub
	}
	return res
}

// Accesses are the accesses of p.
func (p Permission) Accesses() []Access {
	out := make([]Access, 0, len(p.Verbs))
	for _, v := range p.Verbs {
		out = append(out, Access{Namespace: p.Namespace, Group: p.Group, Resource: p.Resource, URL: p.URL, Verb: v})
	}
	return out
}

// Of is the set of the accesses of ps whose caller is one of callers (every caller when none is given),
// without those a cluster-wide access of the set holds already; sorted.
func Of(ps []Permission, callers ...string) []Access {
	seen := map[Access]bool{}
	for _, p := range ps {
		if len(callers) > 0 && !slices.Contains(callers, p.Caller) {
			continue
		}
		for _, a := range p.Accesses() {
			seen[a] = true
		}
	}
	var out []Access
	for a := range seen {
		wide := a
		wide.Namespace = ""
		if a.Namespace != "" && seen[wide] {
			continue
		}
		out = append(out, a)
	}
	Sort(out)
	return out
}

// Sort sorts accesses by namespace, URL, group, resource and verb.
func Sort(as []Access) {
	slices.SortFunc(as, func(a, b Access) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.URL, b.URL), cmp.Compare(a.Group, b.Group),
			cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
}

// Without is what the union of ps's accesses (Of) loses when caller is disabled (drop), and what it must then
// hold instead (add: an access caller held in every namespace that another caller needs in one namespace).
// CallerAccess's are never dropped: every other caller needs them.
func Without(ps []Permission, caller string) (drop, add []Access) {
	if caller == CallerAccess {
		return nil, nil
	}
	var others []string
	for _, c := range Callers {
		if c != caller {
			others = append(others, c)
		}
	}
	all, rest := Of(ps), Of(ps, others...)
	return minus(all, rest), minus(rest, all)
}

// minus is a without b's accesses.
func minus(a, b []Access) []Access {
	var out []Access
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// FromRules are the accesses rules grant in namespace ns ("" for a ClusterRole's), one per verb and resource
// (or URL); sorted. Wildcards are kept as they are written ("*").
func FromRules(ns string, rules []rbacv1.PolicyRule) []Access {
	seen := map[Access]bool{}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				seen[Access{URL: u, Verb: v}] = true
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					seen[Access{Namespace: ns, Group: g, Resource: res, Verb: v}] = true
				}
			}
		}
	}
	out := make([]Access, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	Sort(out)
	return out
}

// ParseAccess reads the docs' form of the accesses of one resource (Name): "`name` verb, verb[ (namespace
// `ns`)]".
func ParseAccess(s string) ([]Access, bool) {
	s = strings.TrimSpace(s)
	var ns string
	if i := strings.Index(s, " (namespace `"); i >= 0 && strings.HasSuffix(s, "`)") {
		ns = s[i+len(" (namespace `") : len(s)-2]
		s = s[:i]
	}
	if !strings.HasPrefix(s, "`") {
		return nil, false
	}
	end := strings.Index(s[1:], "`")
	if end < 0 {
		return nil, false
	}
	name, verbs := s[1:1+end], strings.TrimSpace(s[2+end:])
	var base Access
	if strings.HasPrefix(name, "/") {
		base.URL = name
	} else {
		res, sub, _ := strings.Cut(name, "/")
		res, base.Group, _ = strings.Cut(res, ".")
		base.Resource = res
		if sub != "" {
			base.Resource += "/" + sub
		}
	}
	base.Namespace = ns
	var out []Access
	for _, v := range strings.Split(verbs, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, false
		}
		a := base
		a.Verb = v
		out = append(out, a)
	}
	return out, len(out) > 0
}
