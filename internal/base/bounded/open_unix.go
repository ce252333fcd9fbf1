//go:build unix

package bounded

import "syscall"

// openFlags keep open(2) from blocking on a named pipe with no writer and from taking a terminal as the
// controlling one.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
