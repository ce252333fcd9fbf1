// Package base is the bottom of the stack: production helpers with no dependency on the rest of the module
// (backoff, bounded reads, the connection cap, version and build information). Anything may import them;
// they import nothing of Vitals but each other.
package base
