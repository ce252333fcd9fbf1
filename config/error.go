package config

import (
	"fmt"
	"strings"
)

// Error is a configuration error: where it is and what was expected.
type Error struct {
	File  string // path of the file ("" for flags or environment)
	Line  int    // 1-based line, 0 when unknown
	Field string // dotted field path, e.g. "checks[2].interval"
	Msg   string // what is wrong and what was expected
	Err   error  // the cause, when there is one (for errors.Is); Msg already says it
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is a list of configuration errors reported together.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// As lets errors.As find the first *Error in a list.
func (es Errors) As(target any) bool {
	if t, ok := target.(**Error); ok && len(es) > 0 {
		*t = es[0]
		return true
	}
	return false
}
