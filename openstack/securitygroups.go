package openstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
)

func ruleFrom(r *rules.SecGroupRule) SecurityGroupRule {
	return SecurityGroupRule{ID: r.ID, Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
		PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax, RemoteIPPrefix: r.RemoteIPPrefix,
		RemoteGroupID: r.RemoteGroupID, Description: r.Description}
}

// ListSecurityGroups lists every security group matching opts (Name, ProjectID, Tags) with its
// rules, all pages.
func (c *Cloud) ListSecurityGroups(ctx context.Context, opts ListOpts) ([]SecurityGroup, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("list security groups: %w", Classify(err))
	}
	if err := opts.only("security groups", "Name", "ProjectID", "Tags"); err != nil {
		return nil, err
	}
	lo := groups.ListOpts{Name: opts.Name, ProjectID: opts.ProjectID, Tags: strings.Join(opts.Tags, ","), Limit: opts.PageSize}
	pages, err := groups.List(nc, lo).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list security groups%s: %w", opts.describe(), Classify(err))
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, fmt.Errorf("list security groups%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]SecurityGroup, 0, len(gs))
	for _, g := range gs {
		sg := SecurityGroup{ID: g.ID, Name: g.Name, Description: g.Description, ProjectID: g.ProjectID, RevisionNumber: g.RevisionNumber,
			Rules: make([]SecurityGroupRule, 0, len(g.Rules))}
		for i := range g.Rules {
			sg.Rules = append(sg.Rules, ruleFrom(&g.Rules[i]))
		}
		out = append(out, sg)
	}
	return out, nil
}

// CreateSecurityGroupRule adds rule to the group. Direction defaults to ingress, EtherType to IPv4.
func (c *Cloud) CreateSecurityGroupRule(ctx context.Context, groupID string, rule SecurityGroupRule) (*SecurityGroupRule, error) {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return nil, fmt.Errorf("create rule in security group %s: %w", groupID, Classify(err))
	}
	co := rules.CreateOpts{
		Direction:      rules.RuleDirection(orDefault(rule.Direction, string(rules.DirIngress))),
		EtherType:      rules.RuleEtherType(orDefault(rule.EtherType, string(rules.EtherType4))),
		SecGroupID:     groupID,
		Protocol:       rules.RuleProtocol(rule.Protocol),
		PortRangeMin:   rule.PortRangeMin,
		PortRangeMax:   rule.PortRangeMax,
		RemoteIPPrefix: rule.RemoteIPPrefix,
		RemoteGroupID:  rule.RemoteGroupID,
		Description:    rule.Description,
	}
	r, err := rules.Create(ctx, nc, co).Extract()
	if err != nil {
		return nil, fmt.Errorf("create %s %s rule in security group %s: %w", co.Direction, orDefault(rule.Protocol, "any"), groupID, Classify(err))
	}
	out := ruleFrom(r)
	return &out, nil
}

// DeleteSecurityGroupRule deletes one rule.
func (c *Cloud) DeleteSecurityGroupRule(ctx context.Context, ruleID string) error {
	nc, err := c.Client(ServiceNetworking)
	if err != nil {
		return fmt.Errorf("delete security group rule %s: %w", ruleID, Classify(err))
	}
	if err := rules.Delete(ctx, nc, ruleID).ExtractErr(); err != nil {
		return fmt.Errorf("delete security group rule %s: %w", ruleID, Classify(err))
	}
	return nil
}
