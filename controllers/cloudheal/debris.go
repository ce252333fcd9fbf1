package cloudheal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// The remediation actions of the debris repair: destructive removals.
const (
	VerbDeleteLoadBalancer = "DeleteLoadBalancer"
	VerbDeleteFloatingIP   = "DeleteFloatingIP"
	VerbDeletePort         = "DeletePort"
)

// Reasons of the LiveDebrisCleared condition and of the repair's Events.
const (
	ReasonNoDebris           = "NoDebris"
	ReasonDebrisFound        = "DebrisFound"
	ReasonDebrisRemoveFailed = "DebrisRemoveFailed"
	// ReasonDebrisRemoved is the Normal Event of a removal.
	ReasonDebrisRemoved = "DebrisRemoved"
	// ReasonFloatingIPKept is the Warning Event of an unattached floating IP of the cloud controller
	// manager's for a Service that is gone: reported, never deleted.
	ReasonFloatingIPKept = "DebrisFloatingIPKept"
)

// computeOwner starts the device owner of a server's port (compute:<zone>).
const computeOwner = "compute:"

// maxListed bounds how many objects a condition message names.
const maxListed = 10

// DebrisRead is what the debris repair detects from, read only when it is enabled; every list complete.
type DebrisRead struct {
	// Services are every Service of the workload cluster (all types).
	Services []corev1.Service
	// FloatingIPs of the project.
	FloatingIPs []openstack.FloatingIP
	// Ports on the cluster's network (spec.openstack.subnetID's); nil and PortsJudged false without a subnet.
	Ports       []openstack.Port
	PortsJudged bool
	// Servers of the project by ID (the complete list).
	Servers map[string]bool
}

// LiveDebris removes what the cloud controller manager left behind on a running cluster: load balancers of
// Services that are gone, their VIP ports and the floating IPs on them, VIP ports of load balancers that are
// gone, and ports of servers that are gone. It is off by default.
type LiveDebris struct{ m *Metrics }

// Name implements pass.Repair.
func (LiveDebris) Name() string { return "debris" }

// Conditions implements pass.Repair.
func (LiveDebris) Conditions() []string { return []string{v1alpha1.ConditionLiveDebrisCleared} }

// Enabled implements pass.Repair.
func (LiveDebris) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.CloudHeal.Repairs.Debris.IsEnabled()
}

// debrisItem is one object seen as debris in this pass.
type debrisItem struct {
	rec v1alpha1.Debris
	// reportOnly: an unattached floating IP of the cloud controller manager's, never deleted.
	reportOnly bool
	// lb is the debris load balancer a floating IP or a VIP port goes with ("" for none).
	lb string
	// vip is a debris load balancer's VIP address (never in a live Service's ingress at the delete).
	vip string
	// server is the server a server-less port names.
	server string
	proven bool
}

type debrisFinding struct {
	LiveDebris
	items []debrisItem
	// count is every object seen (also beyond status's cap).
	count       int
	portsJudged bool
	lbs, fips   int
	ports       int
}

func debrisKey(k v1alpha1.DebrisKind, id string) string { return string(k) + "/" + id }

// Detect implements pass.Repair: pure over the read and the block before the pass.
func (r LiveDebris) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	st := in.Read
	f := &debrisFinding{LiveDebris: r}
	d := st.Debris
	if d == nil {
		return f
	}
	f.portsJudged, f.lbs, f.fips, f.ports = d.PortsJudged, len(st.LoadBalancers), len(d.FloatingIPs), len(d.Ports)
	var found []debrisItem
	lbs := debrisLoadBalancers(st.Settings.ClusterName, st.SubnetID, st.LoadBalancers, d.Services)
	debrisLB := map[string]*debrisItem{}
	for i := range lbs {
		debrisLB[lbs[i].rec.ID] = &lbs[i]
	}
	// VIP ports of the debris load balancers, and the floating IPs on them
	vipOf := map[string]string{} // VIP port ID -> debris load balancer
	for _, it := range lbs {
		for i := range st.LoadBalancers {
			if lb := &st.LoadBalancers[i]; lb.ID == it.rec.ID && lb.VIPPortID != "" {
				vipOf[lb.VIPPortID] = lb.ID
			}
		}
	}
	found = append(found, debrisFloatingIPs(st.Settings.ClusterName, d.FloatingIPs, d.Services, vipOf)...)
	found = append(found, lbs...)
	if d.PortsJudged {
		found = append(found, debrisPorts(d.Ports, st.LoadBalancers, debrisLB, d.Servers)...)
	}
	f.count = len(found)
	prev := map[string]v1alpha1.Debris{}
	for _, p := range st.Prev.Debris {
		prev[debrisKey(p.Kind, p.ID)] = p
	}
	proofAge := st.Settings.DebrisProofAge
	// the objects already recorded keep their places (and their proof) in the capped list
	var known, fresh []debrisItem
	for _, it := range found {
		it.rec.FirstSeen, it.rec.LastSeen, it.rec.Passes = metav1.NewTime(in.Now), metav1.NewTime(in.Now), 1
		if p, ok := prev[debrisKey(it.rec.Kind, it.rec.ID)]; ok && p.Name == it.rec.Name && p.Revision == it.rec.Revision {
			it.rec.FirstSeen, it.rec.Passes, it.rec.Reported = p.FirstSeen, p.Passes, p.Reported
			if in.Now.Sub(p.LastSeen.Time) >= st.Settings.Interval {
				// a pass at least one interval after the last sighting
				it.rec.Passes = min(p.Passes+1, 2)
			} else {
				it.rec.LastSeen = p.LastSeen
			}
			it.proven = it.rec.Passes >= 2 && in.Now.Sub(it.rec.FirstSeen.Time) >= proofAge
			known = append(known, it)
			continue
		}
		fresh = append(fresh, it)
	}
	f.items = append(known, fresh...)
	if len(f.items) > v1alpha1.MaxDebris {
		f.items = f.items[:v1alpha1.MaxDebris]
	}
	return f
}

// debrisLoadBalancers are the load balancers of lbs that cluster owns (ccm.OwnsLoadBalancer on subnet)
// whose Service is gone from services or no longer of type LoadBalancer. Never one a live Service names by
// its loadbalancer.openstack.org/load-balancer-id annotation, nor one whose VIP address a live Service's
// status.loadBalancer.ingress holds, nor one PENDING_* (the cloud controller manager is mid-operation), nor
// one whose name is cut (255 characters) without a tag that names its Service.
func debrisLoadBalancers(cluster, subnet string, lbs []openstack.LoadBalancer, services []corev1.Service) []debrisItem {
	named, served := map[string]bool{}, map[string]bool{}
	live := map[string]*corev1.Service{}
	for i := range services {
		s := &services[i]
		live[s.Namespace+"/"+s.Name] = s
		if id := s.Annotations[ccm.AnnotationLoadBalancerID]; id != "" {
			named[id] = true
		}
		for _, ing := range s.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				served[ing.IP] = true
			}
		}
	}
	var out []debrisItem
	for i := range lbs {
		lb := &lbs[i]
		if !ccm.OwnsLoadBalancer(cluster, subnet, lb) || named[lb.ID] || lb.VIPAddress != "" && served[lb.VIPAddress] {
			continue
		}
		if lb.ProvisioningStatus != "ACTIVE" && lb.ProvisioningStatus != "ERROR" {
			continue // PENDING_*: the cloud controller manager (or Octavia) is mid-operation; DELETED: going
		}
		svc, ok := lbService(cluster, lb)
		if !ok {
			continue
		}
		why := "its Service " + svc + " is gone"
		if s := live[svc]; s != nil {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				continue
			}
			why = "its Service " + svc + " is no longer of type LoadBalancer"
		}
		out = append(out, debrisItem{rec: v1alpha1.Debris{Kind: v1alpha1.DebrisLoadBalancer, ID: lb.ID, Name: lb.Name, Service: svc, Why: why}, vip: lb.VIPAddress})
	}
	return out
}

// lbService is the Service lb was made for, by its name or else a tag (a cut name names none).
func lbService(cluster string, lb *openstack.LoadBalancer) (string, bool) {
	for _, n := range append([]string{lb.Name}, lb.Tags...) {
		if ns, svc, ok := ccm.ServiceOf(cluster, n); ok && strings.HasPrefix(n, ccm.LoadBalancerPrefix) {
			return ns + "/" + svc, true
		}
	}
	return "", false
}

// debrisFloatingIPs are the floating IPs with exactly the cloud controller manager's description for a
// Service of cluster that is gone (or no longer of type LoadBalancer): removed when attached to the VIP port
// of a debris load balancer (vipOf: VIP port -> load balancer), reported only when unattached (the cloud
// controller manager's keep-floatingip keeps them on purpose, and the annotation cannot be read once the
// Service is gone). A floating IP of any other description (a user's), or attached elsewhere, is not one.
func debrisFloatingIPs(cluster string, fips []openstack.FloatingIP, services []corev1.Service, vipOf map[string]string) []debrisItem {
	lbSvc := map[string]bool{}
	for i := range services {
		if services[i].Spec.Type == corev1.ServiceTypeLoadBalancer {
			lbSvc[services[i].Namespace+"/"+services[i].Name] = true
		}
	}
	var out []debrisItem
	for _, fip := range fips {
		ns, name, ok := ccm.ServiceOf(cluster, fip.Description)
		if !ok || strings.HasPrefix(fip.Description, ccm.LoadBalancerPrefix) || lbSvc[ns+"/"+name] {
			continue
		}
		svc := ns + "/" + name
		rec := v1alpha1.Debris{Kind: v1alpha1.DebrisFloatingIP, ID: fip.ID, Name: fip.Address, Service: svc}
		switch lb := vipOf[fip.PortID]; {
		case fip.PortID == "":
			rec.Why = "the floating IP of Service " + svc + ", which is gone, is attached to nothing (kept: the cloud controller manager keeps such addresses on purpose)"
			out = append(out, debrisItem{rec: rec, reportOnly: true})
		case lb != "":
			rec.Why = "the floating IP of Service " + svc + ", which is gone, is on the VIP port of load balancer " + lb + ", which is debris"
			out = append(out, debrisItem{rec: rec, lb: lb})
		}
	}
	return out
}

// debrisPorts are the ports of ports (the cluster's network) that are debris: the VIP port of a debris load
// balancer (debrisLB) or of a load balancer the project no longer shows (lbs), and a port owned by a
// compute: device naming a server the project's complete list (servers) does not hold. Never a port with no
// device ID or of another owner (router interfaces, DHCP, Octavia's others, one made for a server not yet
// booted).
func debrisPorts(ports []openstack.Port, lbs []openstack.LoadBalancer, debrisLB map[string]*debrisItem, servers map[string]bool) []debrisItem {
	exists := map[string]bool{}
	for i := range lbs {
		exists[lbs[i].ID] = true
	}
	var out []debrisItem
	for i := range ports {
		p := &ports[i]
		rec := v1alpha1.Debris{Kind: v1alpha1.DebrisPort, ID: p.ID, Name: p.Name, Revision: int64(p.RevisionNumber)}
		if lb, ok := ccm.VIPPortOf(p); ok {
			switch {
			case debrisLB[lb] != nil:
				rec.Service, rec.Why = debrisLB[lb].rec.Service, "the VIP port of load balancer "+lb+", which is debris"
			case !exists[lb]:
				rec.Why = "the VIP port of load balancer " + lb + ", which is gone"
			default:
				continue
			}
			out = append(out, debrisItem{rec: rec, lb: lb})
			continue
		}
		if strings.HasPrefix(p.DeviceOwner, computeOwner) && p.DeviceID != "" && !servers[p.DeviceID] {
			rec.Why = "bound to server " + p.DeviceID + ", which the project does not list"
			out = append(out, debrisItem{rec: rec, server: p.DeviceID})
		}
	}
	return out
}

// Unhealthy implements pass.Finding: none for the storm rule (debris holds nothing of the cluster's
// workload broken; the policy's budgets and dry-run hold its removals).
func (f *debrisFinding) Unhealthy() []string { return nil }

// errLater holds a removal whose object is not ready for it yet (a VIP port whose load balancer Octavia
// is still deleting): tried again in a later pass.
var errLater = errors.New("not yet")

// errNoLonger ends the proof of an object that is no longer debris at the fresh read.
var errNoLonger = errors.New("no longer debris")

func (it *debrisItem) action() remediation.Action {
	verb := map[v1alpha1.DebrisKind]string{v1alpha1.DebrisLoadBalancer: VerbDeleteLoadBalancer,
		v1alpha1.DebrisFloatingIP: VerbDeleteFloatingIP, v1alpha1.DebrisPort: VerbDeletePort}[it.rec.Kind]
	return remediation.Action{Verb: verb, Kind: strings.ToLower(string(it.rec.Kind)), ID: it.rec.ID, Name: it.rec.Name,
		Removal: true, Evidence: it.rec.FirstSeen.Time, Class: remediation.Destructive}
}

func (it *debrisItem) object() string { return string(it.rec.Kind) + " " + it.rec.ID }

// Repair implements pass.Finding: the floating IPs first (a load balancer deleted first would leave its
// floating IP unattached, which is never deleted), then the load balancers, then the ports.
func (f *debrisFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	key := client.ObjectKeyFromObject(env.Cluster).String()
	var keep []v1alpha1.Debris
	var failures, listed []string
	var removed, waiting, held int
	blocked := map[string]bool{} // load balancers whose floating IP stays this pass
	seen := map[v1alpha1.DebrisKind]int{}
	order := []v1alpha1.DebrisKind{v1alpha1.DebrisFloatingIP, v1alpha1.DebrisLoadBalancer, v1alpha1.DebrisPort}
	for _, kind := range order {
		for i := range f.items {
			it := &f.items[i]
			if it.rec.Kind != kind {
				continue
			}
			seen[kind]++
			if it.reportOnly {
				if !it.rec.Reported {
					env.Warn(ReasonFloatingIPKept, "Report", it.object()+" ("+it.rec.Name+"): "+it.rec.Why)
					it.rec.Reported = true
				}
				keep = append(keep, it.rec)
				listed = append(listed, it.object()+": "+it.rec.Why+"; reported, never deleted")
				continue
			}
			if !it.proven || kind == v1alpha1.DebrisLoadBalancer && blocked[it.rec.ID] {
				waiting++
				if kind == v1alpha1.DebrisFloatingIP {
					blocked[it.lb] = true
				}
				keep = append(keep, it.rec)
				listed = append(listed, fmt.Sprintf("%s: %s; awaiting its proof (first seen %s)", it.object(), it.rec.Why, it.rec.FirstSeen.UTC().Format(time.RFC3339)))
				continue
			}
			a := it.action()
			outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error { return f.remove(ctx, env, it) })
			switch {
			case outcome == pass.OutcomeDone:
				removed++
				f.m.DebrisRemoved.WithLabelValues(key, string(kind)).Inc()
				note := "removed " + it.object() + " (" + it.rec.Name + "): " + it.rec.Why
				env.Event(corev1.EventTypeNormal, ReasonDebrisRemoved, a.Verb, note)
				env.Line(v1alpha1.Action{Time: metav1.NewTime(env.Now), Action: v1alpha1.ActionRemoved, Object: a.Object(), Reason: ReasonDebrisRemoved, Message: it.rec.Why})
				continue
			case outcome == pass.OutcomeFailed && errors.Is(err, errNoLonger):
				// the fresh read clears it: its proof ends
				env.Event(corev1.EventTypeNormal, ReasonNoDebris, a.Verb, it.object()+": "+err.Error())
				continue
			case outcome == pass.OutcomeFailed && errors.Is(err, errLater):
				waiting++
				listed = append(listed, it.object()+": "+it.rec.Why+"; "+err.Error())
			case outcome == pass.OutcomeFailed:
				failures = append(failures, it.object()+": "+err.Error())
				env.Warn(ReasonDebrisRemoveFailed, a.Verb, it.object()+": "+err.Error())
			default:
				held++
				listed = append(listed, it.object()+": "+it.rec.Why+"; "+outcome+": "+d.Message)
			}
			if kind == v1alpha1.DebrisFloatingIP {
				blocked[it.lb] = true
			}
			keep = append(keep, it.rec)
		}
	}
	st := env.Read.Status
	st.Debris, st.DebrisCount = keep, int32(f.count)
	st.DebrisRemovedTotal += int64(removed)
	for _, kind := range order {
		f.m.Debris.WithLabelValues(key, string(kind)).Set(float64(seen[kind]))
	}
	counts := fmt.Sprintf("%d load balancers, %d floating IPs", f.lbs, f.fips)
	if f.portsJudged {
		counts += fmt.Sprintf(", %d ports on the cluster's network", f.ports)
	} else {
		counts += "; ports not judged: spec.openstack.subnetID is not set, so the cluster's network is not known"
	}
	more := ""
	if len(listed) > maxListed {
		more = fmt.Sprintf("; and %d more", len(listed)-maxListed)
		listed = listed[:maxListed]
	}
	if f.count > len(f.items) {
		more += fmt.Sprintf("; %d beyond the %d the status keeps", f.count-len(f.items), v1alpha1.MaxDebris)
	}
	switch {
	case len(failures) > 0:
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonDebrisRemoveFailed,
			Message: fmt.Sprintf("%s; %d debris removed, %d could not be: %s", counts, removed, len(failures), strings.Join(failures, "; "))}}
	case len(keep) > 0:
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonDebrisFound,
			Message: fmt.Sprintf("%s; %d debris (%d awaiting proof, %d held by the remediation policy), %d removed this pass: %s%s",
				counts, len(keep), waiting, held, removed, strings.Join(listed, "; "), more)}}
	}
	return []pass.Report{{Status: metav1.ConditionTrue, Reason: ReasonNoDebris,
		Message: fmt.Sprintf("%s; no debris (%d removed this pass)", counts, removed)}}
}

// remove reads the object again immediately before its delete and checks the verdict on the fresh read,
// then deletes it.
func (f *debrisFinding) remove(ctx context.Context, env *pass.Env[*State], it *debrisItem) error {
	switch it.rec.Kind {
	case v1alpha1.DebrisFloatingIP:
		return f.removeFloatingIP(ctx, env, it)
	case v1alpha1.DebrisLoadBalancer:
		return f.removeLoadBalancer(ctx, env, it)
	}
	return f.removePort(ctx, env, it)
}

func (f *debrisFinding) removeFloatingIP(ctx context.Context, env *pass.Env[*State], it *debrisItem) error {
	fip, err := env.Cloud.GetFloatingIP(ctx, it.rec.ID)
	if err != nil {
		return fmt.Errorf("read floating IP %s again: %w", it.rec.ID, err)
	}
	if fip.Description != ccm.FloatingIPDescription(env.Read.Settings.ClusterName, nsOf(it.rec.Service), nameOf(it.rec.Service)) {
		return fmt.Errorf("%w: floating IP %s's description changed", errNoLonger, it.rec.ID)
	}
	lb, err := env.Cloud.GetLoadBalancer(ctx, it.lb)
	if err != nil {
		return fmt.Errorf("read load balancer %s again: %w", it.lb, err)
	}
	if fip.PortID == "" || fip.PortID != lb.VIPPortID {
		return fmt.Errorf("%w: floating IP %s is no longer on the VIP port of load balancer %s", errNoLonger, it.rec.ID, it.lb)
	}
	if err := serviceStillGone(ctx, env, it.rec.Service, lb); err != nil {
		return err
	}
	return env.Cloud.DeleteFloatingIP(ctx, it.rec.ID)
}

func (f *debrisFinding) removeLoadBalancer(ctx context.Context, env *pass.Env[*State], it *debrisItem) error {
	lb, err := env.Cloud.GetLoadBalancer(ctx, it.rec.ID)
	if openstack.IsNotFound(err) {
		return fmt.Errorf("%w: load balancer %s is gone", errNoLonger, it.rec.ID)
	} else if err != nil {
		return fmt.Errorf("read load balancer %s again: %w", it.rec.ID, err)
	}
	if lb.Name != it.rec.Name {
		return fmt.Errorf("%w: load balancer %s was renamed", errNoLonger, it.rec.ID)
	}
	if lb.ProvisioningStatus != "ACTIVE" && lb.ProvisioningStatus != "ERROR" {
		return fmt.Errorf("%w: load balancer %s is %s", errLater, it.rec.ID, known(lb.ProvisioningStatus))
	}
	if err := serviceStillGone(ctx, env, it.rec.Service, lb); err != nil {
		return err
	}
	return env.Cloud.DeleteLoadBalancer(ctx, it.rec.ID, true)
}

// removePort deletes a port at the revision it was proven at. The project's openstack client sends a
// port's delete without If-Match (openstack.Ports.DeletePort): the fresh read of the same revision
// immediately before stands for it.
func (f *debrisFinding) removePort(ctx context.Context, env *pass.Env[*State], it *debrisItem) error {
	p, err := env.Cloud.GetPort(ctx, it.rec.ID)
	if openstack.IsNotFound(err) {
		return fmt.Errorf("%w: port %s is gone", errNoLonger, it.rec.ID)
	} else if err != nil {
		return fmt.Errorf("read port %s again: %w", it.rec.ID, err)
	}
	if int64(p.RevisionNumber) != it.rec.Revision {
		return fmt.Errorf("%w: port %s changed since it was proven (revision %d, proven at %d)", errNoLonger, it.rec.ID, p.RevisionNumber, it.rec.Revision)
	}
	if it.lb != "" {
		if id, ok := ccm.VIPPortOf(p); !ok || id != it.lb {
			return fmt.Errorf("%w: port %s is no longer the VIP port of load balancer %s", errNoLonger, it.rec.ID, it.lb)
		}
		if _, err := env.Cloud.GetLoadBalancer(ctx, it.lb); err == nil {
			return fmt.Errorf("%w: its load balancer %s is still there", errLater, it.lb)
		} else if !openstack.IsNotFound(err) {
			return fmt.Errorf("read load balancer %s again: %w", it.lb, err)
		}
	} else {
		if !strings.HasPrefix(p.DeviceOwner, computeOwner) || p.DeviceID != it.server {
			return fmt.Errorf("%w: port %s is bound elsewhere now", errNoLonger, it.rec.ID)
		}
		if _, err := env.Cloud.GetServer(ctx, it.server); err == nil {
			return fmt.Errorf("%w: server %s of port %s is there", errNoLonger, it.server, it.rec.ID)
		} else if !openstack.IsNotFound(err) {
			return fmt.Errorf("read server %s again: %w", it.server, err)
		}
	}
	return env.Cloud.DeletePort(ctx, it.rec.ID)
}

// serviceStillGone reads the workload cluster's Services again, uncached, and checks that none names lb or
// serves its VIP address and that svc is gone or not of type LoadBalancer.
func serviceStillGone(ctx context.Context, env *pass.Env[*State], svc string, lb *openstack.LoadBalancer) error {
	var svcs corev1.ServiceList
	if err := env.Workload.Client().List(ctx, &svcs); err != nil {
		return fmt.Errorf("read the workload cluster's services again: %w", err)
	}
	if len(debrisLoadBalancers(env.Read.Settings.ClusterName, env.Read.SubnetID, []openstack.LoadBalancer{*lb}, svcs.Items)) == 0 {
		return fmt.Errorf("%w: load balancer %s is a live Service's (%s) at the fresh read", errNoLonger, lb.ID, svc)
	}
	return nil
}

func nsOf(svc string) string   { ns, _, _ := strings.Cut(svc, "/"); return ns }
func nameOf(svc string) string { _, n, _ := strings.Cut(svc, "/"); return n }
