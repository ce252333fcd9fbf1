package tenancy

import (
	"context"
	"errors"
	"fmt"

	"github.com/vitalsproject/vitals/openstack"
)

// AttachmentCloud is a Cloud that also reads and removes its volumes' attachments.
type AttachmentCloud interface {
	Cloud
	openstack.VolumeAttachments
}

// errNoAttachments: the connection cannot read attachments (a test double without them).
var errNoAttachments = errors.New("the cloud connection cannot read volume attachments")

// Attachments is c's attachment API when c offers one (a Scope's Cloud does).
func Attachments(c Cloud) (openstack.VolumeAttachments, bool) {
	a, ok := c.(openstack.VolumeAttachments)
	return a, ok
}

var _ AttachmentCloud = (*scoped)(nil)

func (s *scoped) attachments() (openstack.VolumeAttachments, error) {
	a, ok := s.conn.(openstack.VolumeAttachments)
	if !ok {
		return nil, errNoAttachments
	}
	return a, nil
}

// ListVolumeAttachments lists the attachments the token's project sees (Cinder shows a project its own;
// an attachment carries no project: a caller keeps those of volumes it listed from the project).
func (s *scoped) ListVolumeAttachments(ctx context.Context) ([]openstack.VolumeAttachment, error) {
	a, err := s.attachments()
	if err != nil {
		return nil, err
	}
	return a.ListVolumeAttachments(ctx)
}

// DeleteVolumeAttachment removes an attachment once its volume is proven the project's and the
// attachment that volume's (read fresh).
func (s *scoped) DeleteVolumeAttachment(ctx context.Context, id string) error {
	a, err := s.attachments()
	if err != nil {
		return err
	}
	if err := s.proveAttachment(ctx, a, id); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return a.DeleteVolumeAttachment(ctx, id) })
}

// DetachServerVolume detaches a volume of the project from a server of the project.
func (s *scoped) DetachServerVolume(ctx context.Context, serverID, volumeID string) error {
	a, err := s.attachments()
	if err != nil {
		return err
	}
	if _, err := s.GetVolume(ctx, volumeID); err != nil {
		return err
	}
	if _, err := s.GetServer(ctx, serverID); err != nil {
		return err
	}
	return fencedErr(ctx, func(ctx context.Context) error { return a.DetachServerVolume(ctx, serverID, volumeID) })
}

func (s *scoped) proveAttachment(ctx context.Context, a openstack.VolumeAttachments, id string) error {
	as, err := a.ListVolumeAttachments(ctx)
	if err != nil {
		return fmt.Errorf("prove volume attachment %s is the project's: %w", id, err)
	}
	for _, at := range as {
		if at.ID != id {
			continue
		}
		if _, err := s.GetVolume(ctx, at.VolumeID); err != nil {
			return fmt.Errorf("prove volume attachment %s is the project's: %w", id, err)
		}
		return nil
	}
	return s.foreign("volume attachment", id)
}
