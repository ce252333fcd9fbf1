package cloudheal

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbRestoreLBRule is the remediation action that creates a rule a load balancer's group is missing.
const VerbRestoreLBRule = "RestoreLoadBalancerRule"

// Reasons of the LoadBalancerSecurityGroupsHealthy condition and of the repair's Events.
const (
	ReasonRulesPresent     = "RulesPresent"
	ReasonRulesMissing     = "RulesMissing"
	ReasonRulesDrifted     = "RulesDrifted"
	ReasonRuleCreateFailed = "RuleCreateFailed"
	ReasonNoManagedGroups  = "NoManagedGroups"
	ReasonRuleRestored     = "LoadBalancerRuleRestored"
	ReasonForeignGroup     = "ForeignGroup"
)

// annotationSourceRanges is the Service annotation the cloud controller manager reads when
// spec.loadBalancerSourceRanges is empty.
const annotationSourceRanges = "service.beta.kubernetes.io/load-balancer-source-ranges"

// LBGroupName is the name the cloud controller manager gives a Service's load-balancer security group
// (lb-sg-<uid>-<namespace>-<name>, cut to Neutron's 255 bytes).
func LBGroupName(svc *corev1.Service) string {
	n := fmt.Sprintf("lb-sg-%s-%s-%s", svc.UID, svc.Namespace, svc.Name)
	if len(n) > 255 {
		n = n[:255]
	}
	return n
}

// LBGroupDescription is the description the cloud controller manager gives it, for its --cluster-name.
func LBGroupDescription(svc *corev1.Service, clusterName string) string {
	return fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", svc.Namespace, svc.Name, clusterName)
}

// LBRules are the rules the cloud controller manager keeps in svc's group: ingress to each node port (of
// the port's protocol) from each of cidrs, and to the health check node port (TCP) from the member subnet,
// all of the subnet's ethertype.
func LBRules(svc *corev1.Service, subnetCIDR string, cidrs []string) []openstack.SecurityGroupRule {
	eth := "IPv4"
	if p, err := netip.ParsePrefix(subnetCIDR); err == nil && p.Addr().Is6() {
		eth = "IPv6"
	}
	var out []openstack.SecurityGroupRule
	if hc := int(svc.Spec.HealthCheckNodePort); hc != 0 {
		out = append(out, openstack.SecurityGroupRule{Direction: "ingress", EtherType: eth, Protocol: "tcp", RemoteIPPrefix: subnetCIDR, PortRangeMin: hc, PortRangeMax: hc})
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		for _, cidr := range cidrs {
			out = append(out, openstack.SecurityGroupRule{Direction: "ingress", EtherType: eth, Protocol: strings.ToLower(string(p.Protocol)),
				RemoteIPPrefix: cidr, PortRangeMin: int(p.NodePort), PortRangeMax: int(p.NodePort)})
		}
	}
	return out
}

// sourceRanges are the Service's load-balancer source ranges as the cloud controller manager reads them.
func sourceRanges(svc *corev1.Service) []string {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return svc.Spec.LoadBalancerSourceRanges
	}
	var out []string
	for _, r := range strings.Split(svc.Annotations[annotationSourceRanges], ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return []string{"0.0.0.0/0"}
	}
	return out
}

// sameRule compares rules as the cloud controller manager does.
func sameRule(a, b openstack.SecurityGroupRule) bool {
	return a.Direction == b.Direction && strings.EqualFold(a.Protocol, b.Protocol) && a.EtherType == b.EtherType &&
		a.RemoteIPPrefix == b.RemoteIPPrefix && a.PortRangeMin == b.PortRangeMin && a.PortRangeMax == b.PortRangeMax
}

func ruleString(r openstack.SecurityGroupRule) string {
	return fmt.Sprintf("%s %s %s %d-%d from %s", r.Direction, r.EtherType, r.Protocol, r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix)
}

// LBSecurityGroups restores the rules the cloud controller manager's load-balancer security groups are
// missing, and reports the rules beyond them.
type LBSecurityGroups struct{ m *Metrics }

// Name implements pass.Repair.
func (LBSecurityGroups) Name() string { return "loadBalancerSecurityGroups" }

// Conditions implements pass.Repair.
func (LBSecurityGroups) Conditions() []string {
	return []string{v1alpha1.ConditionLBSecurityGroupsHealthy}
}

// Enabled implements pass.Repair.
func (LBSecurityGroups) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.CloudHeal.Repairs.LoadBalancerSecurityGroups.IsEnabled()
}

// lbGroup is one Service's group as this pass found it.
type lbGroup struct {
	service string // namespace/name
	group   openstack.SecurityGroup
	missing []openstack.SecurityGroupRule
	extra   []openstack.SecurityGroupRule
}

type lbFinding struct {
	LBSecurityGroups
	services, unmanaged int
	groups              []lbGroup
	// foreign names the Services whose group's name is the cloud controller manager's, its description not.
	foreign []string
	// noSubnet: the Subnet source ranges without a subnet in the spec.
	noSubnet bool
}

// Detect implements pass.Repair.
func (r LBSecurityGroups) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	st := in.Read
	f := &lbFinding{LBSecurityGroups: r, services: len(st.LBServices)}
	mode := in.Cluster.Spec.Controllers.CloudHeal.Repairs.LoadBalancerSecurityGroups.SourceRanges
	for i := range st.LBServices {
		svc := &st.LBServices[i]
		key := svc.Namespace + "/" + svc.Name
		gs := st.Groups[LBGroupName(svc)]
		if len(gs) == 0 {
			f.unmanaged++
			continue
		}
		desc := LBGroupDescription(svc, st.Settings.ClusterName)
		var ours []openstack.SecurityGroup
		for _, g := range gs {
			if g.Description == desc {
				ours = append(ours, g)
			}
		}
		if len(ours) != 1 {
			// another's group of that name, or several: never written
			f.foreign = append(f.foreign, key)
			continue
		}
		cidrs := []string{st.SubnetCIDR}
		if mode == v1alpha1.LBSourceRangesService {
			cidrs = sourceRanges(svc)
		} else if st.SubnetCIDR == "" {
			f.noSubnet = true
			continue
		}
		g := lbGroup{service: key, group: ours[0]}
		want := LBRules(svc, st.SubnetCIDR, cidrs)
		for _, w := range want {
			if !slices.ContainsFunc(g.group.Rules, func(have openstack.SecurityGroupRule) bool { return sameRule(have, w) }) {
				g.missing = append(g.missing, w)
			}
		}
		for _, have := range g.group.Rules {
			if have.Direction != "ingress" {
				continue
			}
			if !slices.ContainsFunc(want, func(w openstack.SecurityGroupRule) bool { return sameRule(have, w) }) {
				g.extra = append(g.extra, have)
			}
		}
		f.groups = append(f.groups, g)
	}
	return f
}

// Unhealthy implements pass.Finding: nothing for the storm rule (restoring a rule is safe).
func (f *lbFinding) Unhealthy() []string { return nil }

// Repair implements pass.Finding.
func (f *lbFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	key := client.ObjectKeyFromObject(env.Cluster).String()
	var restored, held int
	var failures, missing, drift []string
	for _, g := range f.groups {
		for _, rule := range g.missing {
			a := remediation.Action{Verb: VerbRestoreLBRule, Kind: "securitygroup", ID: g.group.ID, Name: g.group.Name, Class: remediation.Safe}
			outcome, _, err := env.Act(ctx, a, func(ctx context.Context) error { return restoreRule(ctx, env, g, rule) })
			switch outcome {
			case pass.OutcomeDone:
				restored++
				f.m.RulesRestored.WithLabelValues(key).Inc()
				env.Event(corev1.EventTypeNormal, ReasonRuleRestored, VerbRestoreLBRule,
					fmt.Sprintf("restored %s to the load-balancer security group %s of Service %s", ruleString(rule), g.group.ID, g.service))
				env.Line(v1alpha1.Action{Time: metav1.NewTime(env.Now), Action: v1alpha1.ActionDone, Object: a.Object(), Reason: ReasonRuleRestored,
					Message: ruleString(rule) + " for Service " + g.service})
			case pass.OutcomeFailed:
				failures = append(failures, err.Error())
				missing = append(missing, g.service+": "+ruleString(rule))
			default:
				held++
				missing = append(missing, g.service+": "+ruleString(rule))
			}
		}
		for _, x := range g.extra {
			drift = append(drift, g.service+": "+ruleString(x))
		}
	}
	env.Read.Status.RulesRestoredTotal += int64(restored)
	f.m.LBRulesMissing.WithLabelValues(key).Set(float64(len(missing)))
	counts := fmt.Sprintf("%d LoadBalancer Services, %d groups of the cloud controller manager's", f.services, len(f.groups))
	notes := ""
	if len(f.foreign) > 0 {
		notes += fmt.Sprintf("; groups named as the cloud controller manager's but not described as its own, never written: %s", strings.Join(f.foreign, ", "))
	}
	if f.noSubnet {
		notes += "; spec.openstack.subnetID is not set: the member subnet's rules cannot be known (sourceRanges: Subnet)"
	}
	switch {
	case len(failures) > 0:
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonRuleCreateFailed,
			Message: fmt.Sprintf("%s; %d rules restored, %d could not be: %s%s", counts, restored, len(failures), strings.Join(failures, "; "), notes)}}
	case len(missing) > 0:
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonRulesMissing,
			Message: fmt.Sprintf("%s; %d rules missing (%d held by the remediation policy): %s%s", counts, len(missing), held, strings.Join(missing, "; "), notes)}}
	case len(drift) > 0:
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonRulesDrifted,
			Message: fmt.Sprintf("%s; %d rules restored; rules beyond the Services' (reported, never deleted): %s%s", counts, restored, strings.Join(drift, "; "), notes)}}
	case len(f.groups) == 0:
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: ReasonNoManagedGroups,
			Message: fmt.Sprintf("%d LoadBalancer Services, none with a security group the cloud controller manager made%s", f.services, notes)}}
	}
	return []pass.Report{{Status: metav1.ConditionTrue, Reason: ReasonRulesPresent,
		Message: fmt.Sprintf("%s; every rule present (%d restored this pass)%s", counts, restored, notes)}}
}

// restoreRule reads the group again immediately before the write: still the cloud controller manager's
// (its description), still missing the rule; then creates it (the scoped cloud proves the group the
// project's).
func restoreRule(ctx context.Context, env *pass.Env[*State], g lbGroup, rule openstack.SecurityGroupRule) error {
	gs, err := env.Cloud.ListSecurityGroups(ctx, openstack.ListOpts{Name: g.group.Name})
	if err != nil {
		return fmt.Errorf("read security group %s again: %w", g.group.ID, err)
	}
	i := slices.IndexFunc(gs, func(x openstack.SecurityGroup) bool { return x.ID == g.group.ID })
	if i < 0 || gs[i].Description != g.group.Description {
		return fmt.Errorf("security group %s is gone or no longer the cloud controller manager's", g.group.ID)
	}
	if slices.ContainsFunc(gs[i].Rules, func(have openstack.SecurityGroupRule) bool { return sameRule(have, rule) }) {
		return nil // back already (the cloud controller manager's own resync)
	}
	rule.Description = "vitals cloudheal: restored for Service " + g.service
	if _, err := env.Cloud.CreateSecurityGroupRule(ctx, g.group.ID, rule); err != nil {
		return fmt.Errorf("restore %s to security group %s: %w", ruleString(rule), g.group.ID, err)
	}
	return nil
}
