package agent

import (
	"os"
	"syscall"
)

// inodeOf returns the inode of path, 0 when it does not exist.
func inodeOf(path string) uint64 {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
