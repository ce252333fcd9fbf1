package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vitalsproject/vitals/openstack"
)

// The doctor's quota checks: one per service, read through the cluster's scoped cloud (its proven
// project only).
//
// Neutron's quotas are judged: flight creates security group rules, and the cluster's own controllers
// (Kuryr, the cloud provider) create the ports, floating IPs, groups, networks and subnets the cluster
// runs on; one of them exhausted fails. Cinder's and Octavia's are for information: deorbit only deletes
// volumes, snapshots and load balancers, which frees quota, so they warn at most. Nova's are not read:
// flight reboots and deletes servers but never creates one, and a machine controller that replaces a
// deleted server gets back the quota the delete freed.
var doctorQuotas = []struct {
	check     string
	service   openstack.Service
	resources []string
	judged    bool
}{
	{"quota-network", openstack.ServiceNetworking, []string{"port", "floatingip", "security_group", "security_group_rule", "network", "subnet"}, true},
	{"quota-block-storage", openstack.ServiceBlockStorage, []string{"volumes", "snapshots", "gigabytes"}, false},
	{"quota-load-balancer", openstack.ServiceLoadBalancer, []string{"load_balancer"}, false},
}

// quotaCheckNames are the names of the quota checks, in order (for the checks an earlier failure skips).
func quotaCheckNames() []string {
	names := make([]string, 0, len(doctorQuotas))
	for _, q := range doctorQuotas {
		names = append(names, q.check)
	}
	return names
}

// States of one quota (DoctorQuota.State) and reasons of the quota checks.
const (
	QuotaUnlimited = "unlimited"
	QuotaOK        = "ok"
	QuotaNear      = "near"      // in use at or above the threshold of the limit
	QuotaExhausted = "exhausted" // in use at or above the limit: nothing more can be created

	ReasonQuotaExhausted  = "QuotaExhausted"
	ReasonQuotaNear       = "QuotaNear"
	ReasonQuotaUnreadable = "QuotaUnreadable"     // skipped: the credentials may not read the quotas (403)
	ReasonQuotaAPIAbsent  = "QuotaAPIAbsent"      // skipped: the service has no quota API (404)
	ReasonServiceAbsent   = "ServiceNotInCatalog" // skipped: the catalog has no such service
)

// DoctorQuota is one resource's quota in a quota check of `vitals doctor -o json|yaml`.
type DoctorQuota struct {
	openstack.Quota
	// State is unlimited, ok, near (at or above the threshold) or exhausted.
	State string `json:"state"`
}

// quotaState judges q against threshold (a fraction of the limit). Reserved resources count as used.
func quotaState(q openstack.Quota, threshold float64) string {
	inUse := q.Used + q.Reserved
	switch {
	case q.Limit < 0:
		return QuotaUnlimited
	case inUse >= q.Limit:
		return QuotaExhausted
	case float64(inUse) >= threshold*float64(q.Limit):
		return QuotaNear
	}
	return QuotaOK
}

// quotaChecks reads the quotas of the project of cloud (a scoped cloud: its own project only) and
// judges them, one check per service. A service without a quota API, not in the catalog, or whose
// quotas the credentials may not read is skipped with the reason; another failed read fails.
func quotaChecks(ctx context.Context, cloud openstack.Quotas, threshold float64) []DoctorCheck {
	out := make([]DoctorCheck, 0, len(doctorQuotas))
	for _, dq := range doctorQuotas {
		ch := DoctorCheck{Name: dq.check}
		qs, err := cloud.Quotas(ctx, dq.service, "")
		switch {
		case errors.Is(err, openstack.ErrServiceUnavailable):
			ch.Result, ch.Reason, ch.Detail = "skipped", ReasonServiceAbsent, fmt.Sprintf("no %s service in the catalog", dq.service)
		case openstack.IsForbidden(err):
			ch.Result, ch.Reason, ch.Detail = "skipped", ReasonQuotaUnreadable, fmt.Sprintf("the credentials may not read the project's %s quotas (403 Forbidden: the service's policy)", dq.service)
		case openstack.IsNotFound(err):
			ch.Result, ch.Reason, ch.Detail = "skipped", ReasonQuotaAPIAbsent, fmt.Sprintf("the %s service offers no quota API (404 Not Found)", dq.service)
		case err != nil:
			ch.Result, ch.Detail = "failed", err.Error()
		default:
			judgeQuotas(&ch, qs, dq.resources, dq.judged, threshold)
		}
		out = append(out, ch)
	}
	return out
}

// judgeQuotas fills ch from the quotas of resources: failed when one is exhausted (warning only
// when the service is not judged), warning when one is near, ok otherwise.
func judgeQuotas(ch *DoctorCheck, qs []openstack.Quota, resources []string, judged bool, threshold float64) {
	byName := map[string]openstack.Quota{}
	for _, q := range qs {
		byName[q.Resource] = q
	}
	var exhausted, near, all []string
	for _, r := range resources {
		q, ok := byName[r]
		if !ok {
			continue
		}
		st := quotaState(q, threshold)
		ch.Quotas = append(ch.Quotas, DoctorQuota{Quota: q, State: st})
		desc := fmt.Sprintf("%s %d/%d", r, q.Used+q.Reserved, q.Limit)
		switch st {
		case QuotaUnlimited:
			desc = fmt.Sprintf("%s %d/unlimited", r, q.Used+q.Reserved)
		case QuotaExhausted:
			exhausted = append(exhausted, desc)
		case QuotaNear:
			near = append(near, fmt.Sprintf("%s (%.0f%%)", desc, 100*float64(q.Used+q.Reserved)/float64(q.Limit)))
		}
		all = append(all, desc)
	}
	pct := fmt.Sprintf("%.0f%%", 100*threshold)
	switch {
	case len(exhausted) > 0:
		ch.Result, ch.Reason = "failed", ReasonQuotaExhausted
		if !judged {
			ch.Result = "warning"
		}
		ch.Detail = "exhausted: " + strings.Join(exhausted, ", ")
		if len(near) > 0 {
			ch.Detail += "; at or above " + pct + ": " + strings.Join(near, ", ")
		}
	case len(near) > 0:
		ch.Result, ch.Reason = "warning", ReasonQuotaNear
		ch.Detail = "at or above " + pct + ": " + strings.Join(near, ", ")
	case len(all) == 0:
		ch.Result, ch.Detail = "ok", "no quota of "+strings.Join(resources, ", ")+" reported"
	default:
		ch.Result, ch.Detail = "ok", strings.Join(all, ", ")
	}
	if !judged {
		ch.Detail += " (for information)"
	}
}
