package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file holds what a long-running process that runs exec checks needs so that no command
// outlives it, whatever process group or session the command moved to (setsid, a double fork):
// the process becomes a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so that every orphan
// below it is reparented to it instead of to the container's init, and a Reaper kills and reaps
// those orphans as they come and every descendant at the end.

// children are the exec checks' commands in flight (pid -> true): their exit is reaped by their
// own Wait, never by the Reaper. mu is held from a command's start to its registration, so that
// the Reaper never sees a command it does not know yet.
var children = struct {
	mu     sync.Mutex
	active map[int]bool
}{active: map[int]bool{}}

// startTracked starts cmd as an exec check's command, known to the Reaper.
func startTracked(start func() error, pid func() int) error {
	children.mu.Lock()
	defer children.mu.Unlock()
	if err := start(); err != nil {
		return err
	}
	children.active[pid()] = true
	return nil
}

// untrack forgets a command once its Wait has reaped it.
func untrack(pid int) {
	children.mu.Lock()
	delete(children.active, pid)
	children.mu.Unlock()
}

// Reaper reaps the orphans that the subreaper attribute brings to this process.
type Reaper struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// ReaperInterval is how often a Reaper looks for orphans.
const ReaperInterval = time.Second

// StartReaper makes the calling process a child subreaper and starts reaping: every interval
// (ReaperInterval when 0), a child of this process that is not an exec check's command in flight
// (an orphan: a command's child that left its group, reparented here) is killed, with its
// process group, and reaped. Stop kills and reaps every descendant. The process must start no
// other children of its own while a Reaper runs.
func StartReaper(interval time.Duration) (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become a child subreaper: %w", err)
	}
	if interval <= 0 {
		interval = ReaperInterval
	}
	r := &Reaper{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				children.mu.Lock()
				reapOrphans(children.active)
				children.mu.Unlock()
			}
		}
	}()
	return r, nil
}

// Stop ends the reaping and kills and reaps every descendant, exec checks' commands in flight
// included, within ctx (processes in uninterruptible sleep may take longer: they are left to
// init). It returns how many it killed.
func (r *Reaper) Stop(ctx context.Context) int {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	killed := 0
	for ctx.Err() == nil {
		children.mu.Lock()
		n := reapOrphans(nil) // every child now, in flight or not
		children.mu.Unlock()
		killed += n
		if n == 0 && len(ownChildren()) == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return killed
}

// reapOrphans kills every child of this process not in keep (and its process group), then reaps
// those that have exited. It returns the number of children it killed or reaped.
func reapOrphans(keep map[int]bool) int {
	n := 0
	for _, pid := range ownChildren() {
		if keep[pid] {
			continue
		}
		n++
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if st, ok := readStat(procDir(""), pid); ok && st.pgrp == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // the orphan led a group of its own
		}
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	return n
}

// ownChildren lists the processes whose parent is this process, from /proc.
func ownChildren() []int {
	dir := procDir("")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if st, ok := readStat(dir, pid); ok && st.ppid == self {
			out = append(out, pid)
		}
	}
	return out
}
