//go:build !unix

package bounded

const openFlags = 0
