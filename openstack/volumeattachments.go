package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/attachments"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/volumeattach"
)

// attachmentsMicroversion is the first Cinder microversion with the attachment API (a project member's
// right: list and delete its own volumes' attachments).
const attachmentsMicroversion = "3.27"

// VolumeAttachment is one Cinder attachment of a volume to a server (the attachment API's record: a
// volume in reserved, attaching, in-use or detaching holds one per server).
type VolumeAttachment struct {
	ID       string
	VolumeID string
	// ServerID is the Nova server the attachment was made for.
	ServerID string
	// Status is the attachment's: reserved, attaching, attached, detaching, error_attaching, ...
	Status     string
	AttachedAt time.Time
}

// VolumeAttachments reads and removes volumes' attachments: Cinder's attachment API, and Nova's
// volume-attachment delete for a server that still exists.
type VolumeAttachments interface {
	// ListVolumeAttachments lists every attachment of the token's project's volumes, all pages.
	ListVolumeAttachments(ctx context.Context) ([]VolumeAttachment, error)
	// DeleteVolumeAttachment removes one attachment through Cinder (the server is gone: Nova has nothing
	// to detach).
	DeleteVolumeAttachment(ctx context.Context, id string) error
	// DetachServerVolume asks Nova to detach a volume from a server that still exists.
	DetachServerVolume(ctx context.Context, serverID, volumeID string) error
}

var _ VolumeAttachments = (*Cloud)(nil)

// attachmentsClient is the block-storage client at the attachment API's microversion (a copy: the
// shared client keeps its own).
func (c *Cloud) attachmentsClient() (*gophercloud.ServiceClient, error) {
	bc, err := c.Client(ServiceBlockStorage)
	if err != nil {
		return nil, err
	}
	sc := *bc
	sc.Microversion = attachmentsMicroversion
	return &sc, nil
}

// ListVolumeAttachments implements VolumeAttachments.
func (c *Cloud) ListVolumeAttachments(ctx context.Context) ([]VolumeAttachment, error) {
	bc, err := c.attachmentsClient()
	if err != nil {
		return nil, fmt.Errorf("list volume attachments: %w", err)
	}
	pages, err := attachments.List(bc, attachments.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list volume attachments: %w", err)
	}
	as, err := attachments.ExtractAttachments(pages)
	if err != nil {
		return nil, fmt.Errorf("list volume attachments: decode: %w", err)
	}
	out := make([]VolumeAttachment, 0, len(as))
	for _, a := range as {
		out = append(out, VolumeAttachment{ID: a.ID, VolumeID: a.VolumeID, ServerID: a.Instance, Status: a.Status, AttachedAt: a.AttachedAt})
	}
	return out, nil
}

// DeleteVolumeAttachment implements VolumeAttachments.
func (c *Cloud) DeleteVolumeAttachment(ctx context.Context, id string) error {
	bc, err := c.attachmentsClient()
	if err != nil {
		return fmt.Errorf("delete volume attachment %s: %w", id, err)
	}
	if err := attachments.Delete(ctx, bc, id).ExtractErr(); err != nil {
		return fmt.Errorf("delete volume attachment %s: %w", id, err)
	}
	return nil
}

// DetachServerVolume implements VolumeAttachments.
func (c *Cloud) DetachServerVolume(ctx context.Context, serverID, volumeID string) error {
	cc, err := c.Client(ServiceCompute)
	if err != nil {
		return fmt.Errorf("detach volume %s from server %s: %w", volumeID, serverID, err)
	}
	if err := volumeattach.Delete(ctx, cc, serverID, volumeID).ExtractErr(); err != nil {
		return fmt.Errorf("detach volume %s from server %s: %w", volumeID, serverID, err)
	}
	return nil
}
