package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// reverseFirstArray reverses the first array-valued member of a JSON object (in document order), or the
// array itself when the body is one. Other members are kept byte for byte, in order.
func reverseFirstArray(body []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return reverseArray(trimmed)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("parse JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("response is neither a JSON object nor an array")
	}
	type member struct {
		key string
		val json.RawMessage
	}
	var members []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("parse JSON: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("parse JSON: %w", err)
		}
		members = append(members, member{key: kt.(string), val: v})
	}
	done := false
	var out bytes.Buffer
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		out.Write(k)
		out.WriteByte(':')
		v := m.val
		if !done && len(v) > 0 && v[0] == '[' {
			if v, err = reverseArray(v); err != nil {
				return nil, err
			}
			done = true
		}
		out.Write(v)
	}
	out.WriteByte('}')
	if !done {
		return nil, errors.New("no array in the response object")
	}
	return out.Bytes(), nil
}

func reverseArray(b []byte) ([]byte, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf("parse JSON array: %w", err)
	}
	for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
		items[i], items[j] = items[j], items[i]
	}
	return json.Marshal(items)
}

// rewriteCatalog replaces the origins of endpoint URLs in a Keystone token ({"token": {"catalog": [...]}})
// or catalog ({"catalog": [...]}) response with what mapOrigin returns ("" = keep).
func rewriteCatalog(body []byte, mapOrigin func(origin string) string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse token response: %w", err)
	}
	catalog, _ := doc["catalog"].([]any)
	if tok, ok := doc["token"].(map[string]any); ok {
		catalog, _ = tok["catalog"].([]any)
	}
	if catalog == nil {
		return body, nil
	}
	changed := false
	for _, svc := range catalog {
		s, _ := svc.(map[string]any)
		eps, _ := s["endpoints"].([]any)
		for _, ep := range eps {
			e, _ := ep.(map[string]any)
			raw, _ := e["url"].(string)
			u, err := url.Parse(raw)
			if err != nil || u.Host == "" {
				continue
			}
			origin := u.Scheme + "://" + u.Host
			if to := mapOrigin(origin); to != "" {
				e["url"] = to + strings.TrimPrefix(raw, origin)
				changed = true
			}
		}
	}
	if !changed {
		return body, nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode token response: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}
