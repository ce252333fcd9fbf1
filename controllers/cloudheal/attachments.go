package cloudheal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// VerbRemoveAttachment is the remediation action that removes a stale volume attachment.
const VerbRemoveAttachment = "RemoveVolumeAttachment"

// Reasons of the VolumeAttachmentsHealthy condition and of the repair's Events.
const (
	ReasonNoStaleAttachments = "NoStaleAttachments"
	ReasonStaleAttachments   = "StaleAttachments"
	ReasonDetachFailed       = "DetachFailed"
	ReasonAttachmentRemoved  = "StaleAttachmentRemoved"
	// ReasonServerBack: the server the attachment names was there again at the write.
	ReasonServerBack = "ServerPresent"
)

// holding are the volume states an attachment holds a volume in.
var holding = []string{"reserved", "attaching", "detaching", "in-use"}

// StaleAttachments removes the attachments of the cluster's volumes whose server is gone, once two
// passes at least one interval apart saw them so and for the repair's timeout; an attachment to a server
// a Ready Node names is never stale.
type StaleAttachments struct{ m *Metrics }

// Name implements pass.Repair.
func (StaleAttachments) Name() string { return "staleAttachments" }

// Conditions implements pass.Repair.
func (StaleAttachments) Conditions() []string {
	return []string{v1alpha1.ConditionVolumeAttachmentsHealthy}
}

// Enabled implements pass.Repair.
func (StaleAttachments) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.CloudHeal.Repairs.StaleAttachments.IsEnabled()
}

// staleAttachment is one attachment seen stale in this pass, with its proof.
type staleAttachment struct {
	rec v1alpha1.StaleAttachment
	// proven: seen in two passes, for the timeout.
	proven bool
}

// Detect implements pass.Repair: the stale attachments of the read, their proof carried on from the
// block before the pass.
func (r StaleAttachments) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	st := in.Read
	f := &staleFinding{StaleAttachments: r, volumes: len(st.Volumes), attachments: len(st.Attachments)}
	prev := map[string]v1alpha1.StaleAttachment{}
	for _, p := range st.Prev.StaleAttachments {
		prev[p.AttachmentID] = p
	}
	gone := (&CloudRead{Volumes: st.Volumes, Attachments: st.Attachments, Servers: st.Servers}).Gone()
	for _, a := range gone {
		if st.ReadyServers[a.ServerID] || st.NodeServers[a.ServerID] {
			// a Node names the server (the project's list missed it, or it is the attach-detach
			// controller's to handle): never this repair's
			continue
		}
		rec := v1alpha1.StaleAttachment{AttachmentID: a.ID, VolumeID: a.VolumeID, ServerID: a.ServerID, FirstSeen: metav1.NewTime(in.Now), Passes: 1}
		if p, ok := prev[a.ID]; ok && p.ServerID == a.ServerID && p.VolumeID == a.VolumeID {
			rec.FirstSeen, rec.Passes = p.FirstSeen, min(p.Passes+1, 2)
		}
		proven := rec.Passes >= 2 && in.Now.Sub(rec.FirstSeen.Time) >= st.Settings.AttachmentTimeout
		f.stale = append(f.stale, staleAttachment{rec: rec, proven: proven})
	}
	return f
}

type staleFinding struct {
	StaleAttachments
	volumes, attachments int
	stale                []staleAttachment
}

// Unhealthy implements pass.Finding: every stale attachment, proven or not.
func (f *staleFinding) Unhealthy() []string {
	out := make([]string, 0, len(f.stale))
	for _, s := range f.stale {
		out = append(out, s.rec.AttachmentID)
	}
	return out
}

func removeAction(rec v1alpha1.StaleAttachment) remediation.Action {
	return remediation.Action{Verb: VerbRemoveAttachment, Kind: "volumeattachment", ID: rec.AttachmentID, Name: rec.VolumeID,
		Evidence: rec.FirstSeen.Time, Removal: true, Class: remediation.Disruptive}
}

// Repair implements pass.Finding.
func (f *staleFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	st := env.Read
	key := client.ObjectKeyFromObject(env.Cluster).String()
	var keep []v1alpha1.StaleAttachment
	var removed, waiting, held int
	var failures []string
	for _, s := range f.stale {
		if !s.proven {
			waiting++
			keep = append(keep, s.rec)
			continue
		}
		a := removeAction(s.rec)
		outcome, _, err := env.Act(ctx, a, func(ctx context.Context) error { return f.remove(ctx, env, s.rec) })
		switch outcome {
		case pass.OutcomeDone:
			removed++
			f.m.Detached.WithLabelValues(key).Inc()
			env.Event(corev1.EventTypeNormal, ReasonAttachmentRemoved, VerbRemoveAttachment, removedNote(s.rec, st.PVs[s.rec.VolumeID]))
			env.Line(v1alpha1.Action{Time: metav1.NewTime(env.Now), Action: v1alpha1.ActionRemoved, Object: a.Object(), Reason: ReasonAttachmentRemoved,
				Message: "server " + s.rec.ServerID + " is gone"})
			continue
		case pass.OutcomeFailed:
			if errors.Is(err, errServerBack) {
				// the server is there at the write: the attachment is not stale, its proof starts again
				env.Event(corev1.EventTypeNormal, ReasonServerBack, VerbRemoveAttachment, a.Object()+": "+err.Error())
				continue
			}
			f.m.DetachFailures.WithLabelValues(key).Inc()
			failures = append(failures, err.Error())
			env.Warn(ReasonDetachFailed, VerbRemoveAttachment, a.Object()+": "+err.Error())
		default:
			held++
		}
		keep = append(keep, s.rec)
	}
	st.Status.StaleAttachments = keep
	st.Status.DetachedTotal += int64(removed)
	f.m.StaleAttachments.WithLabelValues(key).Set(float64(len(keep)))
	counts := fmt.Sprintf("%d volumes of the cluster, %d attachments", f.volumes, f.attachments)
	if len(failures) > 0 {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonDetachFailed,
			Message: fmt.Sprintf("%s; %d stale attachments removed, %d could not be: %s", counts, removed, len(failures), strings.Join(failures, "; "))}}
	}
	if len(keep) > 0 {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonStaleAttachments,
			Message: fmt.Sprintf("%s; %d held by a server that is gone (%d awaiting proof, %d held by the remediation policy), %d removed this pass",
				counts, len(keep), waiting, held, removed)}}
	}
	return []pass.Report{{Status: metav1.ConditionTrue, Reason: ReasonNoStaleAttachments,
		Message: fmt.Sprintf("%s; none held by a server that is gone (%d removed this pass)", counts, removed)}}
}

// errServerBack holds a removal whose server is there again, or named by a Ready Node.
var errServerBack = errors.New("the server is there again")

// remove checks, immediately before the write, that the server is still gone (read fresh) and that no
// Ready Node names it (the Nodes read uncached), then removes the attachment through Cinder and records an
// Event on the volume's PersistentVolume.
func (f *staleFinding) remove(ctx context.Context, env *pass.Env[*State], rec v1alpha1.StaleAttachment) error {
	att, ok := tenancy.Attachments(env.Cloud)
	if !ok {
		return errors.New("the cluster's cloud cannot remove volume attachments")
	}
	if _, err := env.Cloud.GetServer(ctx, rec.ServerID); err == nil {
		return fmt.Errorf("%w: server %s", errServerBack, rec.ServerID)
	} else if !openstack.IsNotFound(err) {
		return fmt.Errorf("read server %s again: %w", rec.ServerID, err)
	}
	var ns corev1.NodeList
	if err := env.Workload.Client().List(ctx, &ns); err != nil {
		return fmt.Errorf("read the workload cluster's nodes again: %w", err)
	}
	if all, _ := nodeServers(ns.Items); all[rec.ServerID] {
		return fmt.Errorf("%w: a Node names server %s", errServerBack, rec.ServerID)
	}
	if err := att.DeleteVolumeAttachment(ctx, rec.AttachmentID); err != nil {
		return err
	}
	if pv := env.Read.PVs[rec.VolumeID]; pv != "" {
		if err := pvEvent(ctx, env.Workload.Client(), pv, removedNote(rec, pv), env.Now); err != nil {
			logf.FromContext(ctx).V(1).Info("cannot record the event on the persistent volume", "pv", pv, "err", err.Error())
		}
	}
	return nil
}

func removedNote(rec v1alpha1.StaleAttachment, pv string) string {
	s := "removed the attachment " + rec.AttachmentID + " of volume " + rec.VolumeID
	if pv != "" {
		s += " (PersistentVolume " + pv + ")"
	}
	return s + " to server " + rec.ServerID + ", which is gone: the volume can be attached again"
}
