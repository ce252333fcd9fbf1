package remediation

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Defaults of a VitalsCluster's remediation policy (spec.remediation).
const (
	DefaultClusterActions = 10
	DefaultClusterWindow  = time.Hour
	DefaultMaxUnhealthy   = "40%"
	DefaultMinProofAge    = 5 * time.Minute
	// MinProofAgeFloor is the least proof age a removal waits for, whatever spec.remediation.minProofAge
	// says, unless AnnotationUnsafeShortProofAge allows less. The evidence must outlast what passes for an
	// orphan for a moment: a port deleted and created again while Nova rebuilds, migrates or re-plugs a
	// server (seconds to tens of seconds), and the clocks of two replicas when a sharded cluster moves
	// from the one that first saw the evidence to the one that acts on it (seconds apart). A minute is
	// well above both, and a fifth of the default.
	MinProofAgeFloor = time.Minute
)

// AnnotationUnsafeShortProofAge, "true" on a VitalsCluster, lets spec.remediation.minProofAge go below
// MinProofAgeFloor (to 0s: a removal on the second pass that sees its evidence, however close the passes).
// Unsafe: a route or a server may go on evidence seen for seconds. The RemediationAllowed condition says
// so while it is in force, and every removal it lets through early says so in its Event and status line.
const AnnotationUnsafeShortProofAge = "vitals.vitalsproject.io/unsafe-allow-short-proof-age"

// settings are one cluster's rules, with the defaults applied.
type settings struct {
	actions      int
	window       time.Duration
	maxUnhealthy intstr.IntOrString
	minProofAge  time.Duration
	// outageFreeze holds disruptive and destructive actions after an outage.
	outageFreeze time.Duration
	// proofAgeNote says how minProofAge relates to the floor when the spec asks for less than it: raised
	// to it, or below it by the unsafe annotation (shortProofAge).
	proofAgeNote  string
	shortProofAge bool
	dryRun        bool
	// paused is set by the pause annotation; pausedWhy says how.
	paused    bool
	pausedWhy string
	exclude   map[string]bool
	// invalid: a setting the CRD's validation should have refused; every action is held.
	invalid error
}

func settingsOf(c *v1alpha1.VitalsCluster) settings {
	sp := c.Spec.Remediation
	s := settings{
		actions: DefaultClusterActions, window: DefaultClusterWindow,
		maxUnhealthy: intstr.FromString(DefaultMaxUnhealthy), minProofAge: DefaultMinProofAge,
		dryRun: sp.DryRun, outageFreeze: sp.OutageFreezeOrDefault(),
	}
	if b := sp.Budget; b != nil {
		if b.Actions != nil {
			s.actions = int(*b.Actions)
		}
		if b.Window != nil {
			s.window = b.Window.Duration
		}
	}
	if sp.MaxUnhealthy != nil {
		s.maxUnhealthy = *sp.MaxUnhealthy
	}
	if sp.MinProofAge != nil {
		s.minProofAge = sp.MinProofAge.Duration
	}
	if s.minProofAge >= 0 && s.minProofAge < MinProofAgeFloor {
		if v1alpha1.Marked(c.Annotations, AnnotationUnsafeShortProofAge) {
			s.shortProofAge = true
			s.proofAgeNote = fmt.Sprintf("UNSAFE: minProofAge %s is below the %s floor, allowed by annotation %s: removals may act on evidence seen for less than %s",
				s.minProofAge, MinProofAgeFloor, AnnotationUnsafeShortProofAge, MinProofAgeFloor)
		} else {
			s.proofAgeNote = fmt.Sprintf("minProofAge %s is below the %s floor: %s applies (annotation %s: \"true\" allows less, unsafe)",
				s.minProofAge, MinProofAgeFloor, MinProofAgeFloor, AnnotationUnsafeShortProofAge)
			s.minProofAge = MinProofAgeFloor
		}
	}
	switch {
	case s.actions < 0:
		s.invalid = fmt.Errorf("spec.remediation.budget.actions: expected 0 or more, got %d", s.actions)
	case s.window <= 0:
		s.invalid = fmt.Errorf("spec.remediation.budget.window: expected a positive duration such as 1h, got %s", s.window)
	case s.minProofAge < 0:
		s.invalid = fmt.Errorf("spec.remediation.minProofAge: expected a non-negative duration such as 5m, got %s", s.minProofAge)
	}
	if _, err := maxUnhealthyOf(s.maxUnhealthy, 100); err != nil && s.invalid == nil {
		s.invalid = fmt.Errorf("spec.remediation.maxUnhealthy: %w", err)
	}
	if v, ok := c.Annotations[v1alpha1.AnnotationPaused]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "false", "":
		case "true":
			s.paused, s.pausedWhy = true, "annotation "+v1alpha1.AnnotationPaused+" is \"true\""
		default:
			// Safety first: a pause that was meant and misspelt still pauses.
			s.paused, s.pausedWhy = true, fmt.Sprintf("annotation %s is %q (not \"true\" or \"false\"): treated as paused", v1alpha1.AnnotationPaused, v)
		}
	}
	s.exclude = ParseExclusions(c.Annotations[v1alpha1.AnnotationExclude])
	return s
}

// maxUnhealthyOf scales maxUnhealthy to total objects: a number as is, a percentage of total rounded up
// (so that one broken object of a few is never a storm).
func maxUnhealthyOf(v intstr.IntOrString, total int) (int, error) {
	if v.Type == intstr.String && !strings.HasSuffix(v.StrVal, "%") {
		return 0, fmt.Errorf("expected a number or a percentage such as \"40%%\", got %q", v.StrVal)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, true)
	if err != nil {
		return 0, fmt.Errorf("expected a number or a percentage such as \"40%%\", got %q", v.String())
	}
	if n < 0 {
		return 0, fmt.Errorf("expected 0 or more, got %q", v.String())
	}
	return n, nil
}

// ParseExclusions splits the exclusion annotation (v1alpha1.AnnotationExclude; `vitals deorbit --vitalscluster` reads it too): comma-separated IDs or names, spaces ignored.
func ParseExclusions(v string) map[string]bool {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	m := map[string]bool{}
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			m[e] = true
		}
	}
	return m
}

// excluded reports whether the exclusions name a's ID or name.
func (s settings) excluded(a Action) bool {
	return s.exclude[a.ID] || (a.Name != "" && s.exclude[a.Name])
}

// Storm reports whether scope trips c's storm rule (spec.remediation.maxUnhealthy), and says so, the
// way Begin judges it: a controller uses it to name the storm in its own condition, also in a pass
// that asks for nothing.
func Storm(c *v1alpha1.VitalsCluster, scope Scope) (bool, string) {
	s := settingsOf(c)
	if scope.Total <= 0 || s.invalid != nil {
		return false, ""
	}
	max, _ := maxUnhealthyOf(s.maxUnhealthy, scope.Total)
	if scope.Unhealthy <= max {
		return false, ""
	}
	return true, fmt.Sprintf("%d of %d objects look broken, more than maxUnhealthy %s (%d)", scope.Unhealthy, scope.Total, s.maxUnhealthy.String(), max)
}
