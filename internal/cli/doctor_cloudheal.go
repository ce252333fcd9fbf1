package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/cloudheal"
	"github.com/vitalsproject/vitals/tenancy"
)

// Reasons of the volume-attachments check.
const (
	ReasonAttachmentsUnreadable = "AttachmentsUnreadable"
	ReasonStaleAttachments      = cloudheal.ReasonStaleAttachments
)

// volumeAttachments reads what cloudheal's stale-attachments repair reads from the cloud, through the
// cluster's scoped cloud: failed when the credentials cannot read the cluster's volumes, their attachments
// (Cinder's attachment API, 3.27) or the project's servers (the repair could not run); a warning for each
// attachment that holds a volume of the cluster for a server the project does not list (cloudheal frees it
// once proven, unless a Node names the server; the doctor does not read the Nodes for it).
func volumeAttachments(ctx context.Context, vc *v1alpha1.VitalsCluster, scope *tenancy.Scope, add func(check, result, detail, reason string)) {
	const check = "volume-attachments"
	name := vc.Name
	if n := vc.Spec.OpenStack.ClusterName; n != "" {
		name = n
	}
	r, err := cloudheal.ReadCloud(ctx, scope.Cloud, name)
	if err != nil {
		add(check, "failed", err.Error(), ReasonAttachmentsUnreadable)
		return
	}
	detail := fmt.Sprintf("%d volumes of cluster %q, %d attachments", len(r.Volumes), name, len(r.Attachments))
	gone := r.Gone()
	if len(gone) == 0 {
		add(check, "ok", detail+", none for a server that is gone", "")
		return
	}
	var ids []string
	for _, a := range gone {
		ids = append(ids, a.ID+" (volume "+a.VolumeID+", server "+a.ServerID+")")
	}
	who := "cloudheal removes them once proven"
	sp := vc.Spec.Controllers.CloudHeal
	if (sp.Enabled != nil && !*sp.Enabled) || !sp.Repairs.StaleAttachments.IsEnabled() {
		who = "cloudheal's stale-attachment repair is off for this cluster: free them by hand"
	}
	add(check, "warning", fmt.Sprintf("%s; %d for a server the project does not list (%s): %s", detail, len(gone), who, strings.Join(ids, ", ")), ReasonStaleAttachments)
}
