package cloudsim

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const snapshotVersion = 1

// snapshot is the persisted form of the simulator's state.
type snapshot struct {
	Version        int               `json:"version"`
	SavedAt        time.Time         `json:"saved_at"`
	Knobs          Knobs             `json:"knobs"`
	Rand           []byte            `json:"rand,omitempty"`
	Projects       []*project        `json:"projects"`
	Users          []*user           `json:"users"`
	AppCreds       []*appCred        `json:"application_credentials"`
	Tokens         []*token          `json:"tokens"`
	Quotas         map[string]*quota `json:"quotas"`
	Networks       []*network        `json:"networks"`
	Subnets        []*subnet         `json:"subnets"`
	Ports          []*port           `json:"ports"`
	FloatingIPs    []*floatingIP     `json:"floating_ips,omitempty"`
	SecurityGroups []*secGroup       `json:"security_groups"`
	Rules          []*sgRule         `json:"security_group_rules"`
	Routers        []*router         `json:"routers"`
	Servers        []*server         `json:"servers"`
	Volumes        []*volume         `json:"volumes"`
	Snapshots      []*volumeSnapshot `json:"snapshots,omitempty"`
	LoadBalancers  []*loadBalancer   `json:"load_balancers"`
}

// Save writes the state to Options.StatePath (atomically, through a temporary file).
func (s *Sim) Save() error {
	if s.opts.StatePath == "" {
		return errors.New("cloudsim save: no state path configured")
	}
	return s.SaveTo(s.opts.StatePath)
}

// SaveTo writes the state to path.
func (s *Sim) SaveTo(path string) error {
	s.mu.RLock() // the lock order: cloud, identity, then the random source
	s.id.mu.RLock()
	ids := s.id.st
	snap := snapshot{Version: snapshotVersion, SavedAt: s.clock.Now().UTC(), Knobs: s.knob(),
		Projects: sortedValues(ids.projects), Users: sortedValues(ids.users), AppCreds: sortedValues(ids.appCreds),
		Tokens: sortedValues(ids.tokens), Quotas: s.st.quotas,
		Networks: s.st.networks.values(), Subnets: s.st.subnets.values(), Ports: s.st.ports.values(),
		FloatingIPs:    s.st.fips.values(),
		SecurityGroups: s.st.secGroups.values(), Rules: s.st.sgRules.values(), Routers: s.st.routers.values(),
		Servers: s.st.servers.values(), Volumes: s.st.volumes.values(), Snapshots: s.st.snapshots.values(), LoadBalancers: s.st.lbs.values()}
	s.rmu.Lock()
	if m, ok := s.src.(encoding.BinaryMarshaler); ok {
		if b, err := m.MarshalBinary(); err == nil {
			snap.Rand = b
		}
	}
	s.rmu.Unlock()
	b, err := json.Marshal(&snap)
	s.id.mu.RUnlock()
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("cloudsim save %s: encode: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cloudsim-*.json")
	if err != nil {
		return fmt.Errorf("cloudsim save %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("cloudsim save %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cloudsim save %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cloudsim save %s: %w", path, err)
	}
	s.log.Info("state saved", "path", path, "bytes", len(b))
	return nil
}

// load reads a state file written by Save; a missing file is an empty state.
func (s *Sim) load(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cloudsim load %s: %w", path, err)
	}
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("cloudsim load %s: %w", path, err)
	}
	if snap.Version != snapshotVersion {
		return fmt.Errorf("cloudsim load %s: version %d, want %d", path, snap.Version, snapshotVersion)
	}
	if err := snap.Knobs.validate(); err != nil {
		return fmt.Errorf("cloudsim load %s: knobs: %w", path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := newIdentityState()
	for _, v := range snap.Projects {
		ids.projects[v.ID] = v
	}
	for _, v := range snap.Users {
		ids.users[v.ID] = v
	}
	for _, v := range snap.AppCreds {
		ids.appCreds[v.ID] = v
	}
	for _, v := range snap.Tokens {
		ids.tokens[v.ID] = v
	}
	s.id.mu.Lock()
	s.id.st = ids
	s.id.mu.Unlock()
	st := newState()
	for k, v := range snap.Quotas {
		st.quotas[k] = v
	}
	putAll(st.networks, snap.Networks)
	putAll(st.subnets, snap.Subnets)
	putAll(st.ports, snap.Ports)
	putAll(st.fips, snap.FloatingIPs)
	putAll(st.secGroups, snap.SecurityGroups)
	putAll(st.sgRules, snap.Rules)
	putAll(st.routers, snap.Routers)
	putAll(st.servers, snap.Servers)
	putAll(st.volumes, snap.Volumes)
	putAll(st.snapshots, snap.Snapshots)
	putAll(st.lbs, snap.LoadBalancers)
	s.st = st
	s.kmu.Lock()
	s.knobs = snap.Knobs
	s.kmu.Unlock()
	s.ipIndex = map[string]map[string]string{}
	for _, p := range snap.Ports {
		for _, f := range p.FixedIPs {
			if s.ipIndex[f.SubnetID] == nil {
				s.ipIndex[f.SubnetID] = map[string]string{}
			}
			s.ipIndex[f.SubnetID][f.IPAddress] = p.ID
		}
	}
	s.events = nil
	rescheduleAll(s.cloud, snap.Servers)
	rescheduleAll(s.cloud, snap.Volumes)
	rescheduleAll(s.cloud, snap.Snapshots)
	rescheduleAll(s.cloud, snap.LoadBalancers)
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if u, ok := s.src.(encoding.BinaryUnmarshaler); ok && len(snap.Rand) > 0 {
		if err := u.UnmarshalBinary(snap.Rand); err != nil {
			return fmt.Errorf("cloudsim load %s: random state: %w", path, err)
		}
	}
	s.log.Info("state loaded", "path", path, "projects", len(ids.projects), "servers", len(st.servers.m))
	return nil
}

func putAll[T item](c *coll[T], vs []T) {
	for _, v := range vs {
		c.put(v)
	}
}

// rescheduleAll plans again the changes under way of loaded resources.
func rescheduleAll[T pending](s *cloud, vs []T) {
	for _, v := range vs {
		if at := *v.due(); !at.IsZero() {
			s.schedule(at, v.kind(), v.key())
		}
	}
}
