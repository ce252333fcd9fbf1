package flight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbAddSecurityGroup is the verb of giving a server its security group back.
const VerbAddSecurityGroup = "AddSecurityGroup"

// SecurityGroupAssociation gives the cluster's security group back to an ACTIVE server of the cluster
// that lost it (Nova's add security group, which applies it to every port of the server). A server
// lacks the group when one of its ports on the nodes' network (any of its ports, without
// spec.openstack.networkID) does not carry it. Each server is asked of the remediation policy.
type SecurityGroupAssociation struct{}

// Name implements Repair.
func (SecurityGroupAssociation) Name() string { return "securityGroupAssociation" }

// Condition implements Repair.
func (SecurityGroupAssociation) Conditions() []string {
	return []string{v1alpha1.ConditionSecurityGroupAssociated}
}

// Enabled implements Repair.
func (SecurityGroupAssociation) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.SecurityGroupAssociation.IsEnabled()
}

// Detect implements Repair.
func (SecurityGroupAssociation) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	snap := in.Read.Snapshot
	if snap.Group == nil {
		return &assocFinding{problem: snap.GroupProblem}
	}
	f := &assocFinding{group: snap.Group}
	for _, sv := range snap.Servers {
		if sv.Status != "ACTIVE" {
			continue
		}
		f.active++
		if LacksGroup(snap.PortsByServer[sv.ID], in.Read.Settings.Read.NetworkID, snap.Group.ID) {
			f.missing = append(f.missing, sv)
		}
	}
	return f
}

// LacksGroup reports whether one of ports on network (any network when "") lacks group.
func LacksGroup(ports []openstack.Port, network, group string) bool {
	for _, p := range ports {
		if network != "" && p.NetworkID != network {
			continue
		}
		if !slices.Contains(p.SecurityGroups, group) {
			return true
		}
	}
	return false
}

// assocFinding is what SecurityGroupAssociation found.
type assocFinding struct {
	problem *Problem
	group   *openstack.SecurityGroup
	active  int
	missing []openstack.Server
}

func (f *assocFinding) Unhealthy() []string {
	ids := make([]string, len(f.missing))
	for i, sv := range f.missing {
		ids[i] = sv.ID
	}
	return ids
}

func (f *assocFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	if f.problem != nil {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: f.problem.Reason, Message: f.problem.Message}}
	}
	if len(f.missing) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "Associated",
			Message: fmt.Sprintf("all %d ACTIVE servers of the cluster have security group %s", f.active, f.group.ID)}}
	}
	var added, failed, held []string
	for _, sv := range f.missing {
		a := remediation.Action{Verb: VerbAddSecurityGroup, Kind: "server", ID: sv.ID, Name: sv.Name, Class: remediation.Safe}
		outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error { return env.Cloud.AddSecurityGroup(ctx, sv.ID, f.group.ID) })
		switch outcome {
		case pass.OutcomeDone:
			added = append(added, sv.ID)
		case pass.OutcomeFailed:
			failed = append(failed, sv.ID+": "+err.Error())
		default:
			held = append(held, sv.ID+" ("+d.Reason+")")
		}
	}
	if len(failed)+len(held) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "Repaired",
			Message: fmt.Sprintf("security group %s given back to %d servers: %s", f.group.ID, len(added), strings.Join(added, ", "))}}
	}
	reason := "GroupMissing"
	if len(failed) > 0 {
		reason = "RepairFailed"
	}
	return []pass.Report{{Status: metav1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("%d of %d ACTIVE servers lack security group %s; given back to %d, failed %d [%s], held back %d [%s]",
			len(f.missing), f.active, f.group.ID, len(added), len(failed), strings.Join(failed, "; "), len(held), strings.Join(held, "; "))}}
}
