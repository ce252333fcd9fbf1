package v1alpha1

import "strconv"

// ParseMarker parses a boolean marker (an annotation or a label such as AnnotationKeep, or Cinder metadata
// carrying the same key) as Kubernetes parses booleans (strconv.ParseBool): 1, t, T, TRUE, true and True are
// true; 0, f, F, FALSE, false and False are false. ok is false for any other value (and an absent one), which
// callers treat as not marked and may report.
func ParseMarker(value string) (marked, ok bool) {
	b, err := strconv.ParseBool(value)
	return b, err == nil
}

// Marked reports whether marks carries key with a true value (ParseMarker). Every reader of a boolean marker
// uses it, so that "True" keeps a volume wherever the marker is read.
func Marked(marks map[string]string, key string) bool {
	v, ok := marks[key]
	if !ok {
		return false
	}
	b, _ := ParseMarker(v)
	return b
}
