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

// cinderDispatch routes /volume/v3[/{project_id}]/volumes/... by hand: the project segment is
// optional, which ServeMux patterns cannot say.
func (s *cinder) cinderDispatch(c *call) (int, any, error) {
	segs := strings.Split(strings.Trim(strings.TrimPrefix(c.r.URL.Path, "/volume/v3/"), "/"), "/")
	if len(segs) > 0 && segs[0] != "volumes" {
		if segs[0] != c.project() && !c.admin() {
			return 0, nil, badRequest("Malformed request url")
		}
		segs = segs[1:]
	}
	notFound := errf(http.StatusNotFound, "itemNotFound", "The resource could not be found.")
	if len(segs) == 0 || segs[0] != "volumes" {
		return 0, nil, notFound
	}
	m := c.r.Method
	switch {
	case len(segs) == 1 && m == http.MethodGet:
		return s.listVolumes(c, false)
	case len(segs) == 1 && m == http.MethodPost:
		return s.createVolume(c)
	case len(segs) == 2 && segs[1] == "detail" && m == http.MethodGet:
		return s.listVolumes(c, true)
	case len(segs) == 2 && m == http.MethodGet:
		return s.getVolume(c, segs[1])
	case len(segs) == 2 && m == http.MethodDelete:
		return s.deleteVolume(c, segs[1])
	case len(segs) == 3 && segs[2] == "action" && m == http.MethodPost:
		return s.volumeAction(c, segs[1])
	case len(segs) <= 3:
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
	scope := c.project()
	if c.admin() && isAllTenants(c) {
		scope = c.query("project_id")
	}
	var md map[string]string
	if raw := c.query("metadata"); raw != "" {
		if md, err = parseCinderMetadata(raw); err != nil {
			return 0, nil, err
		}
	}
	name, status := c.query("name"), c.query("status")
	s.mu.RLock()
	defer s.mu.RUnlock()
	pg, err := list(s.st.volumes, scope, c.query("marker"), limit, func(v *volume) bool {
		if name != "" && v.Name != name || status != "" && v.Status != status {
			return false
		}
		for k, want := range md {
			if v.Metadata[k] != want {
				return false
			}
		}
		return true
	})
	if err != nil {
		return 0, nil, err
	}
	base := c.baseURL()
	out := make([]any, 0, len(pg.items))
	for _, v := range pg.items {
		if detail {
			out = append(out, viewVolume(base, v))
		} else {
			out = append(out, map[string]any{"id": v.ID, "name": v.Name,
				"links": []map[string]string{{"rel": "self", "href": base + "/volume/v3/" + v.Project + "/volumes/" + v.ID}}})
		}
	}
	body := map[string]any{"volumes": out}
	if pg.more {
		body["volumes_links"] = c.nextLink(pg.items[len(pg.items)-1].ID)
	}
	return http.StatusOK, body, nil
}

func (s *cloud) getVolumeLocked(c *call, id string) (*volume, error) {
	v, ok := s.st.volumes.get(id)
	if !ok || !c.visible(v.Project) {
		return nil, errf(http.StatusNotFound, "itemNotFound", "Volume %s could not be found.", id)
	}
	return v, nil
}

func (s *cinder) getVolume(c *call, id string) (int, any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, err := s.getVolumeLocked(c, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"volume": viewVolume(c.baseURL(), v)}, nil
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
	v.Due = now.Add(time.Duration(s.knob().VolumeCreateLatency))
	s.schedule(v.Due, evVolume, v.ID)
	return http.StatusAccepted, map[string]any{"volume": viewVolume(c.baseURL(), v)}, nil
}

var deletableVolumeStatus = map[string]bool{"available": true, "error": true, "error_restoring": true,
	"error_extending": true, "error_managing": true}

func (s *cinder) deleteVolume(c *call, id string) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.getVolumeLocked(c, id)
	if err != nil {
		return 0, nil, err
	}
	if !deletableVolumeStatus[v.Status] || v.AttachedTo != "" {
		return 0, nil, badRequest("Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.")
	}
	s.startVolumeDeleteLocked(v)
	return http.StatusAccepted, nil, nil
}

func (s *cloud) startVolumeDeleteLocked(v *volume) {
	v.Status = "deleting"
	v.Updated = s.now()
	v.Due = time.Time{}
	if s.knob().volumeStuck(v) {
		return
	}
	v.Due = v.Updated.Add(time.Duration(s.knob().VolumeDeleteLatency))
	s.schedule(v.Due, evVolume, v.ID)
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
		v.AttachedTo = ""
		v.Status = "deleting"
		v.Due = s.now()
		s.schedule(v.Due, evVolume, v.ID)
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
