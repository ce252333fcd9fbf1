package checks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file holds the /proc readers shared by the process, port and unix socket checks.

// ProcessMatch selects processes by name, the way operators name services.
type ProcessMatch struct {
	// Name matches a process whose command name (/proc/<pid>/comm, which the kernel cuts to 15
	// bytes) is Name, whose argv[0] base name is Name, or whose argv[1] is a path with base name
	// Name (a script run by an interpreter: "python3 /usr/bin/nova-conductor").
	Name string
	// Cmdline also matches any process whose whole command line (arguments joined by spaces)
	// contains Name, like pgrep -f.
	Cmdline bool
}

func (m ProcessMatch) String() string { return strconv.Quote(m.Name) }

// match reports whether a process with this comm and NUL-separated cmdline matches.
func (m ProcessMatch) match(comm string, cmdline []byte) bool {
	if comm == m.Name || (len(m.Name) > 15 && comm == m.Name[:15]) {
		return true
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	if len(args) > 0 && filepath.Base(string(args[0])) == m.Name {
		return true
	}
	if len(args) > 1 && bytes.IndexByte(args[1], '/') >= 0 && filepath.Base(string(args[1])) == m.Name {
		return true
	}
	return m.Cmdline && strings.Contains(string(bytes.Join(args, []byte{' '})), m.Name)
}

// procDir is the /proc directory under a filesystem root.
func procDir(root string) string { return rooted(root, "/proc") }

// findProcesses returns the PIDs of the processes that match m, leaving out the calling process
// (whose own command line names what it looks for).
func findProcesses(root string, m ProcessMatch) ([]int, error) {
	dir := procDir(root)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err != nil {
			continue // exited meanwhile
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, e.Name(), "cmdline"))
		if m.match(strings.TrimRight(string(comm), "\n"), cmdline) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// socketInodes adds the inodes of the sockets that process pid holds open to set, and tells
// whether its fd directory could be read (it cannot, without privileges, for other users).
func socketInodes(root string, pid int, set map[uint64]int) error {
	dir := filepath.Join(procDir(root), strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if s, ok := strings.CutPrefix(link, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				set[ino] = pid
			}
		}
	}
	return nil
}

// heldSockets returns the socket inodes held by the processes matching m (inode -> pid), the
// matching pids, and a note about fd directories that could not be read.
func heldSockets(root string, m ProcessMatch) (map[uint64]int, []int, string, error) {
	pids, err := findProcesses(root, m)
	if err != nil {
		return nil, nil, "", err
	}
	if len(pids) == 0 {
		return nil, nil, "", fmt.Errorf("no process matching %s", m)
	}
	held := make(map[uint64]int)
	var denied int
	var lastErr error
	for _, pid := range pids {
		if err := socketInodes(root, pid, held); err != nil && !errors.Is(err, os.ErrNotExist) {
			denied++
			lastErr = err
		}
	}
	note := ""
	if denied > 0 {
		note = fmt.Sprintf(" (fds of %d of them unreadable: %v)", denied, lastErr)
	}
	return held, pids, note, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// pidList is a short list of pids for messages ("12,13,..." after 8).
func pidList(pids []int) string {
	if len(pids) > 8 {
		return joinInts(pids[:8]) + ",..."
	}
	return joinInts(pids)
}
