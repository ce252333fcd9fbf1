package checks

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// This file parses the kernel's socket tables: /proc/net/{tcp,tcp6,udp,udp6} and /proc/net/unix.

// inetSocket is one row of /proc/net/{tcp,tcp6,udp,udp6}.
type inetSocket struct {
	proto         string // tcp, tcp6, udp, udp6
	local, remote netip.AddrPort
	state         uint8
	inode         uint64
}

const (
	tcpEstablished = 0x01
	tcpListen      = 0x0A
	udpUnconnected = 0x07 // a bound, unconnected UDP socket (TCP_CLOSE)
)

func (s inetSocket) tcp() bool { return s.proto == "tcp" || s.proto == "tcp6" }

// listening: a TCP socket in LISTEN, or a UDP socket that is bound and not connected.
func (s inetSocket) listening() bool {
	if s.tcp() {
		return s.state == tcpListen
	}
	return s.state == udpUnconnected
}

func (s inetSocket) String() string {
	if s.listening() {
		return s.proto + " " + s.local.String()
	}
	return s.proto + " " + s.local.String() + "->" + s.remote.String()
}

// Verdicts of a socket visitor.
const (
	nextSocket = iota
	skipTable  // the rest of this table cannot match
	stopAll    // found what was wanted
)

// readInetSockets reads the tables of the given protocols ("tcp", "udp"; both IP versions each),
// calling fn for each socket until it says stopAll. A missing table (IPv6 disabled) is skipped.
// Reading a table makes the kernel walk its hash tables, which costs milliseconds on a busy host:
// callers stop as early as they can.
func readInetSockets(root string, protos []string, fn func(inetSocket) int) error {
	for _, p := range protos {
		for _, table := range []string{p, p + "6"} {
			path := rooted(root, "/proc/net/"+table)
			stop, err := readInetTable(path, table, fn)
			if err != nil {
				if os.IsNotExist(err) && table != p {
					continue
				}
				return err
			}
			if stop {
				return nil
			}
		}
	}
	return nil
}

func readInetTable(path, proto string, fn func(inetSocket) int) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		local, err1 := parseHexAddrPort(fields[1])
		remote, err2 := parseHexAddrPort(fields[2])
		state, err3 := strconv.ParseUint(fields[3], 16, 8)
		inode, err4 := strconv.ParseUint(fields[9], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		switch fn(inetSocket{proto: proto, local: local, remote: remote, state: uint8(state), inode: inode}) {
		case skipTable:
			return false, nil
		case stopAll:
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return false, nil
}

// parseHexAddrPort parses "0100007F:1F90" (IPv4) or a 32-digit IPv6 address and a port. The
// kernel prints the address as 32-bit words in host byte order (little-endian here).
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// readUnixSockets returns the inodes of the unix sockets bound to path (listed in
// /proc/net/unix; "@name" for an abstract socket).
func readUnixSockets(root, path string) (map[uint64]bool, error) {
	table := rooted(root, "/proc/net/unix")
	f, err := os.Open(table)
	if err != nil {
		return nil, fmt.Errorf("read unix sockets: %w", err)
	}
	defer f.Close()
	inodes := make(map[uint64]bool)
	sc := bufio.NewScanner(f)
	sc.Scan() // header: Num RefCount Protocol Flags Type St Inode Path
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[7] != path {
			continue
		}
		if ino, err := strconv.ParseUint(fields[6], 10, 64); err == nil {
			inodes[ino] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return inodes, nil
}
