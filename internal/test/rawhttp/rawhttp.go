// Package rawhttp is a TCP server that answers HTTP requests with bytes written by hand: the answers no
// net/http server sends (a body cut off before its Content-Length, a connection reset, a header beyond
// bounds), for the tests of clients that must refuse them. It is part of the test harness: only tests
// import it.
package rawhttp

import (
	"bufio"
	"net"
	"testing"
)

// Server answers every connection on 127.0.0.1 with what answer writes on it, after reading the request's
// header, then closes it (with reset: by an RST, as SO_LINGER 0 makes the kernel send). It returns the
// server's base URL, http://127.0.0.1:PORT; the listener closes when the test ends.
func Server(t testing.TB, reset bool, answer func(w *bufio.Writer)) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("rawhttp: listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c, reset, answer)
		}
	}()
	return "http://" + l.Addr().String()
}

func serve(c net.Conn, reset bool, answer func(w *bufio.Writer)) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		if line, err := r.ReadString('\n'); err != nil || line == "\r\n" {
			break
		}
	}
	w := bufio.NewWriter(c)
	answer(w)
	_ = w.Flush()
	if reset {
		_ = c.(*net.TCPConn).SetLinger(0)
	}
}
