// Package bounded reads what Vitals is given from outside (configuration, state and credentials files) with a
// bound on its size and on the time the read may take, so that a path pointing at /dev/zero, a named pipe with no
// writer, a directory or a file of gigabytes gives a clear error instead of a process that grows or hangs.
//
// It depends on the standard library only: the container healthcheck, which must stay small, uses it too.
package bounded
