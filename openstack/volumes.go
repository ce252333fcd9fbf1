package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
)

func volumeFrom(v *volumes.Volume) Volume {
	return Volume{ID: v.ID, Name: v.Name, ProjectID: v.TenantID, Status: v.Status, Size: v.Size, Metadata: v.Metadata, Created: v.CreatedAt}
}

// ListVolumes lists every volume of the token's project matching opts (Name, ProjectID), all pages.
func (c *Cloud) ListVolumes(ctx context.Context, opts ListOpts) ([]Volume, error) {
	bc, err := c.Client(ServiceBlockStorage)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", Classify(err))
	}
	if err := opts.only("volumes", "Name", "ProjectID"); err != nil {
		return nil, err
	}
	pages, err := volumes.List(bc, volumes.ListOpts{Name: opts.Name, Limit: opts.PageSize}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list volumes%s: %w", opts.describe(), Classify(err))
	}
	vs, err := volumes.ExtractVolumes(pages)
	if err != nil {
		return nil, fmt.Errorf("list volumes%s: decode: %w", opts.describe(), Classify(err))
	}
	out := make([]Volume, 0, len(vs))
	for i := range vs {
		if opts.ProjectID != "" && vs[i].TenantID != "" && vs[i].TenantID != opts.ProjectID {
			continue
		}
		out = append(out, volumeFrom(&vs[i]))
	}
	return out, nil
}

// GetVolume reads one volume.
func (c *Cloud) GetVolume(ctx context.Context, id string) (*Volume, error) {
	bc, err := c.Client(ServiceBlockStorage)
	if err != nil {
		return nil, fmt.Errorf("get volume %s: %w", id, Classify(err))
	}
	v, err := volumes.Get(ctx, bc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get volume %s: %w", id, Classify(err))
	}
	out := volumeFrom(v)
	return &out, nil
}

// DeleteVolume deletes a volume, with its snapshots when cascade is set (Cinder deletes
// asynchronously).
func (c *Cloud) DeleteVolume(ctx context.Context, id string, cascade bool) error {
	bc, err := c.Client(ServiceBlockStorage)
	if err != nil {
		return fmt.Errorf("delete volume %s: %w", id, Classify(err))
	}
	if err := volumes.Delete(ctx, bc, id, volumes.DeleteOpts{Cascade: cascade}).ExtractErr(); err != nil {
		return fmt.Errorf("delete volume %s: %w", id, Classify(err))
	}
	return nil
}
