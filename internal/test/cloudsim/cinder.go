package cloudsim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func (s *cinder) routes(mux *http.ServeMux, api apiFunc) {
	version := func(base string) map[string]any {
		return map[string]any{"id": "v3.0", "status": "CURRENT", "version": "3.70", "min_version": "3.0",
			"updated": "2023-08-31T00:00:00Z", "links": []any{map[string]string{"rel": "self", "href": base + "/volume/v3/"}}}
	}
	mux.Handle("GET /volume/{$}", api(svcVolume, false, func(c *call) (int, any, error) {
		return http.StatusMultipleChoices, map[string]any{"versions": []any{version(c.baseURL())}}, nil
	}))
	mux.Handle("GET /volume/v3/{$}", api(svcVolume, false, func(c *call) (int, any, error) {
		return http.StatusOK, map[string]any{"versions": []any{version(c.baseURL())}}, nil
	}))
	mux.Handle("/volume/v3/", api(svcVolume, true, s.cinderDispatch))
	mux.Handle("/volume/", api(svcVolume, false, notFound))
}

// cinderDispatch routes /volume/v3[/{project_id}]/{volumes,snapshots}/... by hand: the project segment is
// optional, which ServeMux patterns cannot say.
func (s *cinder) cinderDispatch(c *call) (int, any, error) {
	segs := strings.Split(strings.Trim(strings.TrimPrefix(c.r.URL.Path, "/volume/v3/"), "/"), "/")
	if len(segs) > 0 && segs[0] != "volumes" && segs[0] != "snapshots" && segs[0] != "os-quota-sets" && segs[0] != "attachments" {
		if segs[0] != c.project() && !c.admin() {
			return 0, nil, badRequest("Malformed request url")
		}
		segs = segs[1:]
	}
	notFound := errf(http.StatusNotFound, "itemNotFound", "The resource could not be found.")
	if len(segs) == 0 {
		return 0, nil, notFound
	}
	m := c.r.Method
	switch {
	case segs[0] == "volumes" && len(segs) == 1 && m == http.MethodGet:
		return s.listVolumes(c, false)
	case segs[0] == "volumes" && len(segs) == 1 && m == http.MethodPost:
		return s.createVolume(c)
	case segs[0] == "volumes" && len(segs) == 2 && segs[1] == "detail" && m == http.MethodGet:
		return s.listVolumes(c, true)
	case segs[0] == "volumes" && len(segs) == 2 && m == http.MethodGet:
		return show(s.cloud, c, s.volumes(), segs[1])
	case segs[0] == "volumes" && len(segs) == 2 && m == http.MethodDelete:
		return s.deleteVolume(c, segs[1])
	case segs[0] == "volumes" && len(segs) == 3 && segs[2] == "action" && m == http.MethodPost:
		return s.volumeAction(c, segs[1])
	case segs[0] == "snapshots" && len(segs) == 1 && m == http.MethodGet:
		return s.listSnapshots(c)
	case segs[0] == "snapshots" && len(segs) == 1 && m == http.MethodPost:
		return s.createSnapshot(c)
	case segs[0] == "snapshots" && len(segs) == 2 && segs[1] == "detail" && m == http.MethodGet:
		return s.listSnapshots(c)
	case segs[0] == "snapshots" && len(segs) == 2 && m == http.MethodGet:
		return show(s.cloud, c, s.snapshots(), segs[1])
	case segs[0] == "snapshots" && len(segs) == 2 && m == http.MethodDelete:
		return s.deleteSnapshot(c, segs[1])
	case segs[0] == "os-quota-sets" && len(segs) == 2 && m == http.MethodGet:
		return s.getQuotaSet(c, segs[1])
	case segs[0] == "attachments" && !volumeMicroversionAtLeast(c.r, 3, 27):
		// as Cinder: the attachment API does not exist below its microversion
		return 0, nil, notFound
	case segs[0] == "attachments" && len(segs) == 1 && m == http.MethodGet:
		return s.listAttachments(c, false)
	case segs[0] == "attachments" && len(segs) == 2 && segs[1] == "detail" && m == http.MethodGet:
		return s.listAttachments(c, true)
	case segs[0] == "attachments" && len(segs) == 2 && m == http.MethodDelete:
		return s.deleteAttachment(c, segs[1])
	case (segs[0] == "volumes" || segs[0] == "snapshots") && len(segs) <= 3:
		return 0, nil, errf(http.StatusMethodNotAllowed, "badMethod", "The method %s is not allowed for this resource.", m)
	}
	return 0, nil, notFound
}

type volumeView struct {
	ID                 string            `json:"id"`
	Name               string            `json:"name"`
	Description        string            `json:"description"`
	Status             string            `json:"status"`
	Size               int               `json:"size"`
	AvailabilityZone   string            `json:"availability_zone"`
	Created            string            `json:"created_at"`
	Updated            string            `json:"updated_at"`
	VolumeType         string            `json:"volume_type"`
	SnapshotID         *string           `json:"snapshot_id"`
	SourceVolID        *string           `json:"source_volid"`
	Metadata           map[string]string `json:"metadata"`
	Attachments        []volAttachment   `json:"attachments"`
	Bootable           string            `json:"bootable"`
	Encrypted          bool              `json:"encrypted"`
	Multiattach        bool              `json:"multiattach"`
	ReplicationStatus  *string           `json:"replication_status"`
	ConsistencyGroupID *string           `json:"consistencygroup_id"`
	UserID             string            `json:"user_id"`
	TenantID           string            `json:"os-vol-tenant-attr:tenant_id"`
	Links              []link            `json:"links"`
}

type volAttachment struct {
	ID           string  `json:"id"`
	VolumeID     string  `json:"volume_id"`
	AttachmentID string  `json:"attachment_id"`
	ServerID     string  `json:"server_id"`
	Device       string  `json:"device"`
	HostName     *string `json:"host_name"`
}

func viewVolume(base string, v *volume) any {
	view := &volumeView{ID: v.ID, Name: v.Name, Description: v.Description, Status: v.Status, Size: v.Size,
		AvailabilityZone: "nova", Created: microNoZ(v.Created), Updated: microNoZ(v.Updated), VolumeType: v.VolumeType,
		Metadata: v.Metadata, Attachments: []volAttachment{}, Bootable: "false", UserID: v.UserID, TenantID: v.Project,
		Links: []link{{Rel: "self", Href: base + "/volume/v3/" + v.Project + "/volumes/" + v.ID}}}
	if view.Metadata == nil {
		view.Metadata = map[string]string{}
	}
	if view.VolumeType == "" {
		view.VolumeType = "__DEFAULT__"
	}
	if v.AttachedTo != "" {
		view.Attachments = append(view.Attachments, volAttachment{ID: v.ID, VolumeID: v.ID, AttachmentID: v.ID,
			ServerID: v.AttachedTo, Device: "/dev/vdb"})
	}
	return view
}

// parseCinderMetadata reads metadata={'k':'v'} (gophercloud) or JSON.
func parseCinderMetadata(s string) (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err == nil {
		return m, nil
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(s, "'", `"`)), &m); err != nil {
		return nil, badRequest("Invalid filter metadata: %s", s)
	}
	return m, nil
}

func (s *cinder) listVolumes(c *call, detail bool) (int, any, error) {
	limit, err := c.limit(1000)
	if err != nil {
		return 0, nil, err
	}
	scope := listScope(c)
	var md map[string]string
	if raw := c.query("metadata"); raw != "" {
		if md, err = parseCinderMetadata(raw); err != nil {
			return 0, nil, err
		}
	}
	name, status := c.query("name"), c.query("status")
	return index(s.cloud, c, s.st.volumes, "volumes", scope, limit, func(v *volume) bool {
		return matchVolume(v.Name, v.Status, v.Metadata, name, status, md)
	}, summaryOr(detail))
}

// matchVolume reports whether a volume or snapshot passes Cinder's name, status and metadata filters.
func matchVolume(name, status string, md map[string]string, wantName, wantStatus string, wantMD map[string]string) bool {
	if wantName != "" && name != wantName || wantStatus != "" && status != wantStatus {
		return false
	}
	for k, want := range wantMD {
		if md[k] != want {
			return false
		}
	}
	return true
}

// summaryOr is the view of a volume list: the details, or (Cinder's summary) the ID, name and link.
func summaryOr(detail bool) func(*call, *volume) any {
	if detail {
		return func(c *call, v *volume) any { return viewVolume(c.baseURL(), v) }
	}
	return func(c *call, v *volume) any {
		return map[string]any{"id": v.ID, "name": v.Name,
			"links": []map[string]string{{"rel": "self", "href": c.baseURL() + "/volume/v3/" + v.Project + "/volumes/" + v.ID}}}
	}
}

// listScope is the project a Cinder list walks: the caller's, or for an admin with all_tenants the one
// project_id names (all when empty).
func listScope(c *call) string {
	if c.admin() && isAllTenants(c) {
		return c.query("project_id")
	}
	return c.project()
}

func (s *cinder) volumes() resource[*volume] {
	return resource[*volume]{key: "volume", find: s.getVolumeLocked, deleted: http.StatusAccepted,
		view: func(c *call, v *volume) any { return viewVolume(c.baseURL(), v) }}
}

func (s *cloud) getVolumeLocked(c *call, id string) (*volume, error) {
	v, ok := s.st.volumes.get(id)
	if !ok || !c.visible(v.Project) {
		return nil, errf(http.StatusNotFound, "itemNotFound", "Volume %s could not be found.", id)
	}
	return v, nil
}

func (s *cinder) createVolume(c *call) (int, any, error) {
	var b struct {
		Volume *struct {
			Size        json.Number       `json:"size"`
			Name        string            `json:"name"`
			Description string            `json:"description"`
			VolumeType  string            `json:"volume_type"`
			Metadata    map[string]string `json:"metadata"`
		} `json:"volume"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	vb := b.Volume
	if vb == nil {
		return 0, nil, badRequest("Missing required element 'volume' in request body.")
	}
	size, err := strconv.Atoi(vb.Size.String())
	if err != nil || size <= 0 {
		return 0, nil, badRequest("Invalid input for field/attribute size. Value: %s. size must be an integer > 0", vb.Size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	v := &volume{ID: s.newUUID(), Name: vb.Name, Description: vb.Description, Project: c.project(), UserID: c.tok.UserID,
		Status: "creating", Size: size, VolumeType: vb.VolumeType, Metadata: vb.Metadata, Created: now, Updated: now}
	s.st.volumes.put(v)
	s.later(v, time.Duration(s.knob().VolumeCreateLatency))
	return http.StatusAccepted, map[string]any{"volume": viewVolume(c.baseURL(), v)}, nil
}

var deletableVolumeStatus = map[string]bool{"available": true, "error": true, "error_restoring": true,
	"error_extending": true, "error_managing": true}

// deleteVolume answers DELETE: the volume in deleting, gone after the delete latency (never when the knobs keep
// it stuck). Only a volume at rest that is not attached may go; with snapshots, only with cascade=true, and they
// go with it.
func (s *cinder) deleteVolume(c *call, id string) (int, any, error) {
	cascade := false
	if v := c.query("cascade"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return 0, nil, badRequest("Invalid value '%s' for cascade: must be a boolean", v)
		}
		cascade = b
	}
	return removeLater(s.cloud, c, s.volumes(), id, func(v *volume) (time.Duration, error) {
		snaps := s.snapshotsOfLocked(v)
		if !deletableVolumeStatus[v.Status] || v.AttachedTo != "" || len(snaps) > 0 && !cascade {
			return 0, errInvalidVolume
		}
		for _, sn := range snaps {
			if sn.Status != "available" && sn.Status != "error" {
				return 0, badRequest("Invalid volume: Snapshot %s of volume %s is %s, not available or error.", sn.ID, v.ID, sn.Status)
			}
		}
		for _, sn := range snaps {
			sn.Status, sn.Updated = "deleting", s.now()
			s.later(sn, never) // they go with the volume
		}
		return s.startVolumeDeleteLocked(v), nil
	})
}

var errInvalidVolume = badRequest("Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.")

// startVolumeDeleteLocked puts a volume in deleting and answers how long the deletion takes.
func (s *cloud) startVolumeDeleteLocked(v *volume) time.Duration {
	v.Status, v.Updated = "deleting", s.now()
	if s.knob().volumeStuck(v) {
		return never
	}
	return time.Duration(s.knob().VolumeDeleteLatency)
}

// settleVolume finishes a volume's change: a delete removes it with its snapshots, a create makes it available.
func (s *cloud) settleVolume(v *volume) {
	switch v.Status {
	case "deleting":
		for _, sn := range s.snapshotsOfLocked(v) {
			s.st.snapshots.del(sn.ID)
		}
		s.st.volumes.del(v.ID)
	case "creating":
		v.Status, v.Updated = "available", s.now()
	}
}

func (s *cinder) volumeAction(c *call, id string) (int, any, error) {
	var b map[string]any
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.getVolumeLocked(c, id)
	if err != nil {
		return 0, nil, err
	}
	switch {
	case b["os-force_delete"] != nil || hasKey(b, "os-force_delete"):
		if !c.admin() {
			return 0, nil, errf(http.StatusForbidden, "forbidden", "Policy doesn't allow volume_extension:volume_admin_actions:force_delete to be performed.")
		}
		v.AttachedTo, v.Status, v.Updated = "", "deleting", s.now()
		s.later(v, 0)
	case hasKey(b, "os-reset_status"):
		if !c.admin() {
			return 0, nil, errf(http.StatusForbidden, "forbidden", "Policy doesn't allow volume_extension:volume_admin_actions:reset_status to be performed.")
		}
		arg, _ := b["os-reset_status"].(map[string]any)
		st, _ := arg["status"].(string)
		if st == "" {
			return 0, nil, badRequest("Must specify 'status'")
		}
		v.Status, v.Due, v.Updated = st, time.Time{}, s.now()
	default:
		return 0, nil, badRequest("There is no such action: %v", keys(b))
	}
	return http.StatusAccepted, nil, nil
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// Snapshots: created from a volume at rest, creating then available after the volume create latency, deleting
// then gone after the volume delete latency; a volume with snapshots goes only with cascade=true.

type snapshotView struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	VolumeID    string            `json:"volume_id"`
	Status      string            `json:"status"`
	Size        int               `json:"size"`
	Metadata    map[string]string `json:"metadata"`
	Created     string            `json:"created_at"`
	Updated     *string           `json:"updated_at"`
	ProjectID   string            `json:"os-extended-snapshot-attributes:project_id"`
	Progress    string            `json:"os-extended-snapshot-attributes:progress"`
}

func viewSnapshot(v *volumeSnapshot) any {
	view := &snapshotView{ID: v.ID, Name: v.Name, Description: v.Description, VolumeID: v.VolumeID, Status: v.Status,
		Size: v.Size, Metadata: v.Metadata, Created: microNoZ(v.Created), ProjectID: v.Project, Progress: "0%"}
	if view.Metadata == nil {
		view.Metadata = map[string]string{}
	}
	if v.Status == "available" {
		view.Progress = "100%"
	}
	if !v.Updated.Equal(v.Created) {
		u := microNoZ(v.Updated)
		view.Updated = &u
	}
	return view
}

func (s *cloud) getSnapshotLocked(c *call, id string) (*volumeSnapshot, error) {
	v, ok := s.st.snapshots.get(id)
	if !ok || !c.visible(v.Project) {
		return nil, errf(http.StatusNotFound, "itemNotFound", "Snapshot %s could not be found.", id)
	}
	return v, nil
}

func (s *cinder) snapshots() resource[*volumeSnapshot] {
	return resource[*volumeSnapshot]{key: "snapshot", find: s.getSnapshotLocked, deleted: http.StatusAccepted,
		view: plain(viewSnapshot)}
}

// snapshotsOfLocked lists the snapshots of a volume.
func (s *cloud) snapshotsOfLocked(v *volume) []*volumeSnapshot {
	var out []*volumeSnapshot
	for _, id := range s.st.snapshots.ids(v.Project) {
		if sn := s.st.snapshots.m[id]; sn.VolumeID == v.ID {
			out = append(out, sn)
		}
	}
	return out
}

// listSnapshots answers GET .../snapshots[/detail]: Cinder's summary of a snapshot has its status, size and
// volume already, the same view.
func (s *cinder) listSnapshots(c *call) (int, any, error) {
	limit, err := c.limit(1000)
	if err != nil {
		return 0, nil, err
	}
	var md map[string]string
	if raw := c.query("metadata"); raw != "" {
		if md, err = parseCinderMetadata(raw); err != nil {
			return 0, nil, err
		}
	}
	name, status, volumeID := c.query("name"), c.query("status"), c.query("volume_id")
	return index(s.cloud, c, s.st.snapshots, "snapshots", listScope(c), limit, func(v *volumeSnapshot) bool {
		return (volumeID == "" || v.VolumeID == volumeID) && matchVolume(v.Name, v.Status, v.Metadata, name, status, md)
	}, s.snapshots().view)
}

func (s *cinder) createSnapshot(c *call) (int, any, error) {
	var b struct {
		Snapshot *struct {
			VolumeID    string            `json:"volume_id"`
			Name        string            `json:"name"`
			Description string            `json:"description"`
			Force       any               `json:"force"`
			Metadata    map[string]string `json:"metadata"`
		} `json:"snapshot"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	sb := b.Snapshot
	if sb == nil || sb.VolumeID == "" {
		return 0, nil, badRequest("Invalid input for field/attribute snapshot: 'volume_id' is a required property")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vol, err := s.getVolumeLocked(c, sb.VolumeID)
	if err != nil {
		return 0, nil, err
	}
	force, _ := sb.Force.(bool)
	if fs, ok := sb.Force.(string); ok {
		force, _ = strconv.ParseBool(fs)
	}
	if vol.Status != "available" && !(force && vol.Status == "in-use") {
		return 0, nil, badRequest("Invalid volume: Volume %s status must be available, but current status is: %s.", vol.ID, vol.Status)
	}
	now := s.now()
	v := &volumeSnapshot{ID: s.newUUID(), Name: sb.Name, Description: sb.Description, Project: vol.Project,
		VolumeID: vol.ID, Status: "creating", Size: vol.Size, Metadata: sb.Metadata, Created: now, Updated: now}
	s.st.snapshots.put(v)
	s.later(v, time.Duration(s.knob().VolumeCreateLatency))
	return http.StatusAccepted, map[string]any{"snapshot": viewSnapshot(v)}, nil
}

func (s *cinder) deleteSnapshot(c *call, id string) (int, any, error) {
	return removeLater(s.cloud, c, s.snapshots(), id, func(v *volumeSnapshot) (time.Duration, error) {
		if v.Status != "available" && v.Status != "error" {
			return 0, badRequest("Invalid snapshot: Volume Snapshot status must be available or error, but current status is: %s.", v.Status)
		}
		v.Status, v.Updated = "deleting", s.now()
		return time.Duration(s.knob().VolumeDeleteLatency), nil
	})
}

// settleSnapshot finishes a snapshot's change: a delete removes it, a create makes it available.
func (s *cloud) settleSnapshot(v *volumeSnapshot) {
	switch v.Status {
	case "deleting":
		s.st.snapshots.del(v.ID)
	case "creating":
		v.Status, v.Updated = "available", s.now()
	}
}
