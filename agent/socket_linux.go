package agent

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// fileIDs returns the inode and group of path, 0 when it does not exist.
func fileIDs(path string) (inode uint64, gid uint32) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, st.Gid
	}
	return 0, 0
}

// checkPeer admits a connection from root, from the agent's own user, or, when the socket is 0660,
// from a process of the socket's group (SO_PEERCRED: the peer's credentials when it connected).
func (s *SocketServer) checkPeer(conn *net.UnixConn) error { return checkPeer(conn, s.mode, s.gid) }

// checkPeer admits a connection to a socket of mode and group gid from root, from the agent's own
// user, or, at 0660, from a process of that group (SO_PEERCRED: the peer's credentials when it
// connected).
func checkPeer(conn *net.UnixConn, mode os.FileMode, gid uint32) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	if credErr != nil {
		return fmt.Errorf("peer credentials: %w", credErr)
	}
	switch {
	case cred.Uid == 0, int(cred.Uid) == os.Geteuid():
		return nil
	case mode&0o060 != 0 && cred.Gid == gid:
		return nil
	}
	return fmt.Errorf("peer pid %d uid %d gid %d is not root, the agent's user or the socket's group", cred.Pid, cred.Uid, cred.Gid)
}
