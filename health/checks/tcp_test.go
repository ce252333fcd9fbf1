package checks

import (
	"net"
	"strconv"
	"testing"
	"time"
)

func TestTCPRealListeners(t *testing.T) {
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l4.Close()
	tests := []struct {
		name, addr, wantErr string
	}{
		{"ipv4 listener", l4.Addr().String(), ""},
		{"refused", "127.0.0.1:" + strconv.Itoa(freePort(t)), "connection refused"},
	}
	if hasIPv6(t) {
		l6, err := net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l6.Close()
		tests = append(tests, struct{ name, addr, wantErr string }{"ipv6 listener", l6.Addr().String(), ""})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := TCP(TCPOptions{Address: tc.addr, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if err == nil && detail != tc.addr {
				t.Errorf("detail %q", detail)
			}
		})
	}
	for _, o := range []TCPOptions{{}, {Address: "nohostport"}, {Address: "a:1", Timeout: -1}} {
		if _, err := TCP(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
