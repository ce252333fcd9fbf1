package clirun

import "fmt"

// Usagef is an error for bad flags or arguments that a command finds itself (exit code 2, as
// for the flags cobra rejects).
func Usagef(format string, args ...any) error {
	return flagError{fmt.Errorf(format, args...)}
}
