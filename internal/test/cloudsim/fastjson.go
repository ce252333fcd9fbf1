package cloudsim

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The server list is the simulator's largest and most frequent answer. appendServerJSON writes
// the same document as viewServer without reflection; fastjson_test.go checks they agree.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendKey(b []byte, k string) []byte {
	b = appendString(b, k)
	return append(b, ':')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, k)
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendServerJSON appends the detail view of a server. Callers hold s.mu.
func (s *cloud) appendServerJSON(b []byte, base string, v *server, attached map[string][]string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, v.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, v.Name)
	b = append(b, `,"status":`...)
	b = appendString(b, v.Status)
	b = append(b, `,"tenant_id":`...)
	b = appendString(b, v.Project)
	b = append(b, `,"user_id":`...)
	b = appendString(b, v.UserID)
	b = append(b, `,"metadata":`...)
	b = appendStringMap(b, v.Metadata)
	b = append(b, `,"hostId":`...)
	b = appendString(b, hostID(v.Project, v.host()))
	b = append(b, `,"image":{"id":`...)
	b = appendString(b, v.ImageID)
	b = append(b, `},"flavor":{"id":`...)
	b = appendString(b, v.FlavorID)
	b = append(b, `},"created":"`...)
	b = v.Created.UTC().AppendFormat(b, "2006-01-02T15:04:05Z")
	b = append(b, `","updated":"`...)
	b = v.Updated.UTC().AppendFormat(b, "2006-01-02T15:04:05Z")
	b = append(b, `","addresses":{`...)
	// Addresses by network name, in name order like encoding/json's map order.
	type netAddrs struct {
		name  string
		addrs []novaAddress
	}
	var nets []netAddrs
	for _, pid := range v.Ports {
		p, ok := s.st.ports.get(pid)
		if !ok {
			continue
		}
		netName := p.NetworkID
		if n, ok := s.st.networks.get(p.NetworkID); ok {
			netName = n.Name
		}
		i := slices.IndexFunc(nets, func(n netAddrs) bool { return n.name == netName })
		if i < 0 {
			nets = append(nets, netAddrs{name: netName})
			i = len(nets) - 1
		}
		for _, f := range p.FixedIPs {
			ver := 4
			if strings.Contains(f.IPAddress, ":") {
				ver = 6
			}
			nets[i].addrs = append(nets[i].addrs, novaAddress{Version: ver, Addr: f.IPAddress, Type: "fixed", MAC: p.MAC})
		}
	}
	slices.SortFunc(nets, func(a, b netAddrs) int { return strings.Compare(a.name, b.name) })
	first := true
	for _, n := range nets {
		if len(n.addrs) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendKey(b, n.name)
		b = append(b, '[')
		for j, a := range n.addrs {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"version":`...)
			b = strconv.AppendInt(b, int64(a.Version), 10)
			b = append(b, `,"addr":`...)
			b = appendString(b, a.Addr)
			b = append(b, `,"OS-EXT-IPS:type":"fixed","OS-EXT-IPS-MAC:mac_addr":`...)
			b = appendString(b, a.MAC)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `},"accessIPv4":"","accessIPv6":"","links":[{"rel":"self","href":`...)
	b = appendString(b, base+cprefix+"/servers/"+v.ID)
	b = append(b, `}],"key_name":null,"progress":0,"config_drive":"","OS-EXT-STS:vm_state":`...)
	b = appendString(b, v.VMState)
	b = append(b, `,"OS-EXT-STS:task_state":`...)
	if v.TaskState != "" {
		b = appendString(b, v.TaskState)
	} else {
		b = append(b, "null"...)
	}
	power := 0
	switch v.VMState {
	case "active":
		power = 1
	case "stopped":
		power = 4
	}
	b = append(b, `,"OS-EXT-STS:power_state":`...)
	b = strconv.AppendInt(b, int64(power), 10)
	b = append(b, `,"OS-EXT-AZ:availability_zone":"nova","OS-SRV-USG:launched_at":`...)
	if v.Status != "BUILD" {
		b = append(b, '"')
		b = v.Created.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000")
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"OS-SRV-USG:terminated_at":null,"OS-DCF:diskConfig":"MANUAL"`...)
	if names := s.serverGroupNamesLocked(v); len(names) > 0 {
		b = append(b, `,"security_groups":[`...)
		for i, n := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, n)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"os-extended-volumes:volumes_attached":[`...)
	for i, id := range attached[v.ID] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, id)
		b = append(b, `,"delete_on_termination":false}`...)
	}
	b = append(b, `],"locked":false,"tags":[`...)
	for i, t := range v.Tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, t)
	}
	return append(b, "]}"...)
}
