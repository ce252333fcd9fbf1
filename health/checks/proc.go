package checks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	// NotCheckers leaves out, besides the calling process, every checker process (one of the
	// calling process's own binary, or a healthcheck, vitals or vitals-agent one: see
	// CheckerNames), every process an exec check of one started (in the process group or the
	// session it made, or below it), and the callers of the calling process in its own process
	// group (the /openstack/healthcheck script that ran it, named like the service). A
	// concurrent `healthcheck process NAME`, or an exec check whose script carries NAME, never
	// satisfies the check. The check types of package checktype set it.
	NotCheckers bool
}

// CheckerNames are the names (command name or argv[0] base name) of the programs that run
// checks; with NotCheckers their processes never match, unless Name is that very name (a check
// that vitals serve runs).
var CheckerNames = []string{"healthcheck", "vitals", "vitals-agent"}

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

// procStat is what the check reads of /proc/<pid>/stat.
type procStat struct {
	comm                string
	state               byte
	ppid, pgrp, session int
}

// readStat reads /proc/<pid>/stat; comm is between the first '(' and the last ')'.
func readStat(dir string, pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(string(b[end+1:])) // state ppid pgrp session ...
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, false
	}
	st := procStat{comm: string(b[open+1 : end]), state: f[0][0]}
	var e1, e2, e3 error
	st.ppid, e1 = strconv.Atoi(f[1])
	st.pgrp, e2 = strconv.Atoi(f[2])
	st.session, e3 = strconv.Atoi(f[3])
	return st, e1 == nil && e2 == nil && e3 == nil
}

// zombie: exited, not yet reaped (Z), or dead (X): it runs nothing.
func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

// findProcesses returns the PIDs of the processes that match m, leaving out the calling process
// (whose own command line names what it looks for), zombies and, with m.NotCheckers, the checkers
// and their exec children.
func findProcesses(root string, m ProcessMatch) ([]int, error) {
	dir := procDir(root)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var ex *exclusion
	if m.NotCheckers {
		ex = newExclusion(dir, self, m.Name)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		st, ok := readStat(dir, pid)
		if !ok {
			// A fixture tree may hold comm alone; a real process that exited meanwhile has neither.
			comm, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
			if err != nil {
				continue
			}
			st = procStat{comm: strings.TrimRight(string(comm), "\n")}
		}
		if st.zombie() {
			continue // exited meanwhile, or a zombie
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, e.Name(), "cmdline"))
		if !m.match(st.comm, cmdline) {
			continue
		}
		if ex != nil && ex.excluded(pid, st, cmdline) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// exclusion decides which processes are checkers or belong to one (NotCheckers).
type exclusion struct {
	dir      string
	self     int
	selfStat procStat
	selfExe  os.FileInfo // nil when unreadable
	names    []string    // CheckerNames but the name looked for
	stats    map[int]procStat
	checker  map[int]bool
}

func newExclusion(dir string, self int, name string) *exclusion {
	ex := &exclusion{dir: dir, self: self, stats: map[int]procStat{}, checker: map[int]bool{self: true}}
	ex.selfStat, _ = readStat(dir, self)
	ex.selfExe, _ = os.Stat("/proc/self/exe") // the binary really running, whatever the root
	for _, n := range CheckerNames {
		if n != name {
			ex.names = append(ex.names, n)
		}
	}
	return ex
}

func (ex *exclusion) stat(pid int) (procStat, bool) {
	if st, ok := ex.stats[pid]; ok {
		return st, true
	}
	st, ok := readStat(ex.dir, pid)
	if ok {
		ex.stats[pid] = st
	}
	return st, ok
}

// isChecker: the calling process, a process of its own binary, or one named as a checker.
func (ex *exclusion) isChecker(pid int, st procStat, cmdline []byte) bool {
	if c, ok := ex.checker[pid]; ok {
		return c
	}
	c := slices.Contains(ex.names, st.comm)
	if !c && cmdline == nil {
		cmdline, _ = os.ReadFile(filepath.Join(ex.dir, strconv.Itoa(pid), "cmdline"))
	}
	if arg0, _, _ := bytes.Cut(cmdline, []byte{0}); !c && len(arg0) > 0 {
		c = slices.Contains(ex.names, filepath.Base(string(arg0)))
	}
	if !c && ex.selfExe != nil {
		if fi, err := os.Stat(filepath.Join(ex.dir, strconv.Itoa(pid), "exe")); err == nil {
			c = os.SameFile(fi, ex.selfExe)
		}
	}
	ex.checker[pid] = c
	return c
}

// excluded: pid is a checker; or it, the leader of its process group or the leader of its
// session descends from a checker in another process group than pid's (an exec check's
// process group, or a session a child of it made with setsid); or it is a caller of the calling
// process in the calling process's own process group.
func (ex *exclusion) excluded(pid int, st procStat, cmdline []byte) bool {
	if ex.isChecker(pid, st, cmdline) {
		return true
	}
	if st.pgrp == ex.selfStat.pgrp && ex.ancestorOfSelf(pid) {
		return true
	}
	for _, start := range []int{pid, st.pgrp, st.session} {
		if ex.belowChecker(start, st.pgrp) {
			return true
		}
	}
	return false
}

// maxDepth bounds a walk up the process tree.
const maxDepth = 64

// belowChecker: start or one of its ancestors is a checker in another process group than pgrp.
func (ex *exclusion) belowChecker(start, pgrp int) bool {
	p := start
	for i := 0; i < maxDepth && p > 1; i++ {
		st, ok := ex.stat(p)
		if !ok {
			return false
		}
		if st.pgrp != pgrp && ex.isChecker(p, st, nil) {
			return true
		}
		p = st.ppid
	}
	return false
}

// ancestorOfSelf: pid is a parent, grandparent... of the calling process.
func (ex *exclusion) ancestorOfSelf(pid int) bool {
	p := ex.selfStat.ppid
	for i := 0; i < maxDepth && p > 1; i++ {
		if p == pid {
			return true
		}
		st, ok := ex.stat(p)
		if !ok {
			return false
		}
		p = st.ppid
	}
	return false
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
