package health

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// reasonWithheld replaces a failure reason that is not shown.
const reasonWithheld = "reason withheld"

// response is a rendered answer to a probe.
type response struct {
	healthy bool
	status  int
	body    []byte
}

// renderText renders the apiserver's verbose text for one endpoint. Lines, in registration order:
//
//	[+]name ok
//	[+]name ok (detail)                    (a passing check's Check.Detail, shown to every client)
//	[+]name excluded: ok
//	[-]name failed: reason withheld        (the reason itself when details are on)
//
// A check that is not ok but does not fail the probe (degraded, start period, drain delay) shows
// "[+]name ok", with " (why: reason)" appended when details are on. While draining, readiness adds
// "[-]shutdown failed: reason withheld". Then the warning line for unmatched exclusions and
// "<endpoint> check passed" or "<endpoint> check failed".
func renderText(s *snapshot, path int, details bool, ex *exclusions) *response {
	pi := pathProbe[path]
	p := probeByIdx[pi]
	var b bytes.Buffer
	b.Grow(64 + 40*len(s.entries))
	healthy := true
	line := func(name string, excluded, fails bool, why, reason, detail string) {
		switch {
		case excluded:
			b.WriteString("[+]")
			b.WriteString(name)
			b.WriteString(" excluded: ok\n")
		case fails:
			healthy = false
			b.WriteString("[-]")
			b.WriteString(name)
			b.WriteString(" failed: ")
			if details {
				b.WriteString(reason)
			} else {
				b.WriteString(reasonWithheld)
			}
			b.WriteByte('\n')
		default:
			b.WriteString("[+]")
			b.WriteString(name)
			b.WriteString(" ok")
			if detail != "" {
				b.WriteString(" (")
				b.WriteString(detail)
				b.WriteByte(')')
			}
			if details && why != "" {
				b.WriteString(" (")
				b.WriteString(why)
				if reason != "" {
					b.WriteString(": ")
					b.WriteString(reason)
				}
				b.WriteByte(')')
			}
			b.WriteByte('\n')
		}
	}
	for i := range s.entries {
		e := &s.entries[i]
		if e.Probes&p == 0 {
			continue
		}
		line(e.Name, ex.has(e.Name), e.fails[pi], e.excused[pi], e.reason, e.Detail)
	}
	if pi == readyIdx && s.draining {
		line(DrainName, ex.has(DrainName), true, "", ErrDraining.Error(), "")
	}
	if un := ex.unmatched(); len(un) > 0 {
		b.WriteString("warn: some health checks cannot be excluded: no matches for ")
		for i, n := range un {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(n))
		}
		b.WriteByte('\n')
	}
	b.WriteString(pathNames[path])
	resp := &response{healthy: healthy, status: http.StatusOK}
	if healthy {
		b.WriteString(" check passed\n")
	} else {
		b.WriteString(" check failed\n")
		resp.status = http.StatusInternalServerError
	}
	resp.body = b.Bytes()
	return resp
}

// jsonReport is the JSON form of a probe's verdict.
type jsonReport struct {
	Status    string      `json:"status"`
	Probe     string      `json:"probe"`
	Draining  bool        `json:"draining,omitempty"`
	Checks    []jsonCheck `json:"checks"`
	Unmatched []string    `json:"unmatched,omitempty"`
}

type jsonCheck struct {
	Name                 string  `json:"name"`
	Kind                 Kind    `json:"kind"`
	Severity             string  `json:"severity"`
	Probes               string  `json:"probes"`
	Status               Status  `json:"status"`
	Failing              bool    `json:"failing"`
	Excused              string  `json:"excused,omitempty"`
	Excluded             bool    `json:"excluded,omitempty"`
	Stale                bool    `json:"stale,omitempty"`
	LastRun              string  `json:"lastRun,omitempty"`
	LastSuccess          string  `json:"lastSuccess,omitempty"`
	LastFailure          string  `json:"lastFailure,omitempty"`
	DurationSeconds      float64 `json:"durationSeconds"`
	ConsecutiveSuccesses int     `json:"consecutiveSuccesses"`
	ConsecutiveFailures  int     `json:"consecutiveFailures"`
	Count                int     `json:"count,omitempty"`
	Detail               string  `json:"detail,omitempty"`
	Error                string  `json:"error,omitempty"`
	LastError            string  `json:"lastError,omitempty"`
}

func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func toJSONCheck(e *snapEntry, pi int, details bool) jsonCheck {
	c := jsonCheck{
		Name:                 e.Name,
		Kind:                 e.Kind,
		Severity:             e.Severity.String(),
		Probes:               e.Probes.String(),
		Status:               e.Status,
		Failing:              e.fails[pi],
		Excused:              e.excused[pi],
		Stale:                e.Stale,
		LastRun:              jsonTime(e.LastRun),
		LastSuccess:          jsonTime(e.LastSuccess),
		LastFailure:          jsonTime(e.LastFailure),
		DurationSeconds:      e.Duration.Seconds(),
		ConsecutiveSuccesses: e.ConsecutiveSuccesses,
		ConsecutiveFailures:  e.ConsecutiveFailures,
		Count:                e.Count,
		Detail:               e.Detail,
	}
	if details {
		c.Error = e.reason
		if e.LastErr != nil {
			c.LastError = e.LastErr.Error()
		}
	}
	return c
}

// renderJSON renders a probe's verdict as JSON: 200 when healthy, 500 when not (as the text form).
func renderJSON(s *snapshot, pi int, details bool, ex *exclusions) *response {
	p := probeByIdx[pi]
	rep := jsonReport{Probe: p.String(), Checks: make([]jsonCheck, 0, len(s.entries))}
	healthy := true
	for i := range s.entries {
		e := &s.entries[i]
		if e.Probes&p == 0 {
			continue
		}
		c := toJSONCheck(e, pi, details)
		if ex.has(e.Name) {
			c.Excluded, c.Failing = true, false
		} else if c.Failing {
			healthy = false
		}
		rep.Checks = append(rep.Checks, c)
	}
	if pi == readyIdx && s.draining {
		rep.Draining = true
		if !ex.has(DrainName) {
			healthy = false
		}
	}
	rep.Unmatched = ex.unmatched()
	rep.Status = string(StatusOK)
	resp := &response{healthy: healthy, status: http.StatusOK}
	if !healthy {
		rep.Status = string(StatusFailed)
		resp.status = http.StatusInternalServerError
	}
	resp.body, _ = json.Marshal(rep)
	resp.body = append(resp.body, '\n')
	return resp
}

// checkJSON renders one check for a sub-path, with its reasons when details are shown.
func checkJSON(e *snapEntry, pi int, failed bool, reason string, details bool) []byte {
	var c jsonCheck
	if e != nil {
		c = toJSONCheck(e, pi, details)
	} else {
		c = jsonCheck{Name: DrainName, Kind: KindCheck, Severity: Critical.String(),
			Probes: Readiness.String(), Status: StatusFailed}
		if details {
			c.Error = reason
		}
	}
	c.Failing = failed
	out, _ := json.Marshal(c)
	return append(out, '\n')
}

func disabledJSON(reason string) []byte {
	out, _ := json.Marshal(map[string]string{"status": "disabled", "reason": reason})
	return append(out, '\n')
}
