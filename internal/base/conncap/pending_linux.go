package conncap

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending reports whether bytes sent by c's peer wait in the kernel's receive buffer, unread.
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return err == nil && n > 0
}
