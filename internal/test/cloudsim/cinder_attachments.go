package cloudsim

import (
	"net/http"
	"strconv"
	"strings"
)

// Cinder's attachment API (microversion 3.27 and later): the simulator holds at most one attachment per
// volume (volume.AttachedTo), whose ID is the volume's, as the attachments of its volume views say.

// volumeMicroversionAtLeast reports whether the request asks for a volume microversion of at least
// major.minor ("OpenStack-API-Version: volume 3.27"; "latest" is the newest).
func volumeMicroversionAtLeast(r *http.Request, major, minor int) bool {
	svc, ver, ok := strings.Cut(r.Header.Get("OpenStack-API-Version"), " ")
	if !ok || svc != "volume" {
		return false
	}
	if ver == "latest" {
		return true
	}
	ma, mi, ok := strings.Cut(ver, ".")
	if !ok {
		return false
	}
	a, err1 := strconv.Atoi(ma)
	b, err2 := strconv.Atoi(mi)
	if err1 != nil || err2 != nil {
		return false
	}
	return a > major || a == major && b >= minor
}

func viewAttachment(v *volume, detail bool) map[string]any {
	out := map[string]any{"id": v.ID, "volume_id": v.ID, "instance": v.AttachedTo, "status": "attached"}
	if v.Status == "attaching" || v.Status == "reserved" || v.Status == "detaching" {
		out["status"] = v.Status
	}
	if detail {
		out["attached_at"] = microNoZ(v.Updated)
		out["detached_at"] = nil
		out["attach_mode"] = "rw"
		out["connection_info"] = map[string]any{}
	}
	return out
}

func (s *cinder) listAttachments(c *call, detail bool) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []any{}
	for _, id := range s.st.volumes.ids(listScope(c)) {
		if v := s.st.volumes.m[id]; v.AttachedTo != "" {
			out = append(out, viewAttachment(v, detail))
		}
	}
	return http.StatusOK, map[string]any{"attachments": out}, nil
}

// deleteAttachment removes a volume's attachment; the volume is available again (Cinder's answer is the
// volume's remaining attachments: none here).
func (s *cinder) deleteAttachment(c *call, id string) (int, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.volumes.get(id)
	if !ok || !c.visible(v.Project) || v.AttachedTo == "" {
		return 0, nil, errf(http.StatusNotFound, "itemNotFound", "Volume attachment could not be found with filter: attachment_id = %s.", id)
	}
	v.AttachedTo, v.Status, v.Updated = "", "available", s.now()
	return http.StatusOK, map[string]any{"attachments": []any{}}, nil
}
