package healthcheck

import (
	"strings"
	"testing"
)

// env builds an Env from pairs.
func env(kv ...string) Env {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args      string
		wantKinds string // space-separated kinds, or "" when an error is expected
		wantErr   string
	}{
		{"http http://127.0.0.1:8080/health", "http", ""},
		{"http 127.0.0.1:8080/health --status 200-299 --contains ok --timeout 3s --insecure --proxy", "http", ""},
		{"http http://[::1]:8080/ --status=2xx --timeout=0.5 -k", "http", ""},
		{"http https://x/ --header 'X-A: b' -H X-C:d --method HEAD --cacert /dev/null", "", "read CA file: /dev/null: not a regular file (a character device; expected a file)"},
		{"http https://x/ --header Xb", "", `--header: "Xb": expected 'Name: value'`},
		{"http", "", "http: expected URL"},
		{"http a b", "", `http: unexpected argument "b" (expected URL)`},
		{"http ftp://x/", "", "expected an http:// or https:// URL"},
		{"http http://x/ --status 700", "", "--status"},
		{"http http://x/ --timeout soon", "", `--timeout: duration "soon"`},
		{"http http://x/ --timeout", "", "flag --timeout needs a value"},
		{"http http://x/ --insecure=maybe", "", "not a boolean"},
		{"http http://x/ --bogus", "", "http: unknown flag --bogus"},
		{"vitals", "vitals", ""},
		{"vitals 127.0.0.1:9090/livez?verbose --timeout 2s", "vitals", ""},
		{"port nova-conductor 5671 5672", "port", ""},
		{"port nova-conductor 5671,5672 --tcp --cmdline", "port", ""},
		{"port nova-conductor", "", "port: expected PROCESS PORT..."},
		{"port nova-conductor 0", "", `port: expected a port number (1-65535), got "0"`},
		{"port nova-conductor 99999", "", "expected a port number (1-65535)"},
		{"listen haproxy 8080 --udp", "listen", ""},
		{"socket libvirtd /var/run/libvirt/libvirt-sock", "socket", ""},
		{"socket libvirtd", "", "expected PROCESS PATH"},
		{"process nova-compute", "process", ""},
		{"process", "", "process: expected PROCESS"},
		{"file /var/lib/x --max-age 60s", "file", ""},
		{"file /var/lib/x --max-age 30", "file", ""},
		{"file /var/lib/x --max-age -3s", "", "duration"},
		{"tcp 127.0.0.1:5672", "tcp", ""},
		{"tcp nohostport", "", "expected host:port"},
		{"capability NET_ADMIN cap_net_raw", "capability", ""},
		{"capability NET_WIZARD", "", `unknown capability "NET_WIZARD"`},
		{"memory 200", "memory", ""},
		{"memory -1", "memory", ""},
		{"memory 200 --rss", "memory", ""},
		{"memory lots", "", `memory: "lots": expected a whole number`},
		{"http http://x/ -- port nova 5672 -- process nova", "http port process", ""},
		{"http http://x/ --", "", "empty check between separators"},
		{"-- http http://x/", "", "empty check between separators"},
		{"frobnicate x", "", `unknown check "frobnicate"`},
		{"", "", "no check given"},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			cs, err := ParseArgs(splitWords(tc.args), env())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, c := range cs {
				if c.Run == nil {
					t.Fatal("nil Run")
				}
				kinds = append(kinds, c.Kind)
			}
			if got := strings.Join(kinds, " "); got != tc.wantKinds {
				t.Errorf("kinds %q, want %q", got, tc.wantKinds)
			}
		})
	}
}

func TestParseArgsHelp(t *testing.T) {
	for _, a := range []string{"--help", "-h", "help", "http --help"} {
		if _, err := ParseArgs(splitWords(a), env()); err != ErrHelp {
			t.Errorf("%s: %v", a, err)
		}
	}
}

func TestHTTPTimeoutFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		v       string
		wantErr bool
	}{{"", false}, {"3", false}, {"0.25", false}, {"2s", false}, {"0", true}, {"x", true}} {
		_, err := ParseArgs([]string{"http", "http://x/"}, env("HEALTHCHECK_CURL_MAX_TIME", tc.v))
		if (err != nil) != tc.wantErr {
			t.Errorf("HEALTHCHECK_CURL_MAX_TIME=%q: %v", tc.v, err)
		}
	}
}

// splitWords splits on spaces, keeping 'single-quoted' words together.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, any := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in, any = !in, true
		case r == ' ' && !in:
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
