package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name string
		args []string
		env  func(string) string
		code int
		want string
	}{
		{"help", []string{"-help"}, env(), exitOK, "-listen"},
		{"unknown flag", []string{"--bogus"}, env(), exitConfig, "flag provided but not defined"},
		{"arguments", []string{"extra"}, env(), exitConfig, "unexpected arguments"},
		{"listen without a port", []string{"--listen", "10.0.0.1"}, env(), exitConfig, "listen: expected [host]:port"},
		{"relative socket", []string{"--socket", "canary.sock"}, env(), exitConfig, "socket: expected an absolute path"},
		{"bad log level", []string{"--log-level", "loud"}, env(), exitConfig, "log-level: expected"},
		{"a pod IP that is none", nil, env("POD_IP", "pod-ip"), exitConfig, `POD_IP: expected an IP address, got "pod-ip"`},
		{"the port is taken", []string{"--listen", busy.Addr().String()}, env(), exitError, "listen on " + busy.Addr().String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, tt.env, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}
