package healthcheck

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/rawhttp"
	"github.com/vitalsproject/vitals/internal/test/testcert"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// TripleOCommonEnv names TripleO's healthcheck/common.sh (tripleo-common's, installed as
// /usr/share/openstack-tripleo-common/healthcheck/common.sh in TripleO's images); the
// differential test sources it and runs its healthcheck_curl.
const TripleOCommonEnv = "VITALS_TRIPLEO_COMMON_SH"

func tripleoCommon(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv(TripleOCommonEnv), "/usr/share/openstack-tripleo-common/healthcheck/common.sh"} {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "healthcheck_curl ()") {
			return p
		}
	}
	// No TripleO image on this machine, and tripleo-common is in none of the registries it reaches: the
	// project's model of healthcheck_curl (bench/healthcheck, the flags TripleO's function passes to curl)
	// stands in, so that the comparison runs everywhere; with the real common.sh it runs against that.
	_, here, _, _ := runtime.Caller(0)
	model := filepath.Join(filepath.Dir(here), "..", "bench", "healthcheck", "tripleo-healthcheck-curl.sh")
	if _, err := os.Stat(model); err != nil {
		prereq.Missing(t, "TripleO's healthcheck/common.sh (set %s to tripleo-common's file), or the model %s: %v", TripleOCommonEnv, model, err)
		return ""
	}
	t.Logf("%s not set and no tripleo-common installed: comparing with the model of healthcheck_curl, %s", TripleOCommonEnv, model)
	shim := filepath.Join(t.TempDir(), "common.sh")
	if err := os.WriteFile(shim, []byte("healthcheck_curl () {\n  bash "+strconv.Quote(model)+" \"$1\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return shim
}

// cutServer answers 200 with a Content-Length it never fills, then closes (with reset: an RST).
func cutServer(t *testing.T, reset bool) string {
	t.Helper()
	return rawhttp.Server(t, reset, func(w *bufio.Writer) {
		_, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("ok\n", 1000))
	}) + "/"
}

// TripleO's healthcheck_curl and `healthcheck http --insecure` (what docs/migration.md maps it
// to) give the same verdict on the same endpoints, a TLS endpoint at 127.0.0.1 whose certificate
// names only a host name included; without --insecure ours refuses that certificate.
func TestBinaryAgreesWithTripleOHealthcheckCurl(t *testing.T) {
	bin := binary(t)
	common := tripleoCommon(t)
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			prereq.Missing(t, "%s, which TripleO's script runs: %v", tool, err)
		}
	}
	plain := startHTTP(t, "tcp4", "127.0.0.1:0", serviceHandler())
	mismatched := httptest.NewUnstartedServer(serviceHandler())
	mismatched.TLS = &tls.Config{Certificates: []tls.Certificate{testcert.Server(t, nil, []string{"svc-i43.example"}).TLS()}}
	mismatched.StartTLS()
	t.Cleanup(mismatched.Close)
	redirect := httptest.NewServer(http.RedirectHandler("/elsewhere", http.StatusFound))
	t.Cleanup(redirect.Close)
	refused := "http://" + freeAddr(t) + "/"

	endpoints := []struct {
		name, url string
		healthy   bool
	}{
		{"200", plain + "/health", true},
		{"500", plain + "/broken", false},
		{"404", plain + "/absent", false},
		{"302 not followed", redirect.URL + "/", true},
		{"TLS, certificate for another name", mismatched.URL + "/health", true},
		{"TLS, 500", mismatched.URL + "/broken", false},
		{"refused", refused, false},
		{"body cut off", cutServer(t, false), false},
		{"body reset", cutServer(t, true), false},
	}
	for _, ep := range endpoints {
		t.Run(ep.name, func(t *testing.T) {
			tri := exec.Command("bash", "-c", `source "$1"; healthcheck_curl "$2"`, "tripleo", common, ep.url)
			tri.Env = append(os.Environ(), "HEALTHCHECK_CURL_MAX_TIME=10")
			out, err := tri.CombinedOutput()
			triCode := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				triCode = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			code, line := runBinary(t, bin, "http", "--insecure", ep.url)
			if (triCode == 0) != ep.healthy {
				t.Errorf("TripleO's healthcheck_curl exits %d (%q), want healthy=%v (the test's premise)", triCode, strings.TrimSpace(string(out)), ep.healthy)
			}
			if (code == 0) != (triCode == 0) {
				t.Errorf("healthcheck http --insecure exits %d (%q), TripleO's healthcheck_curl %d (%q)", code, line, triCode, strings.TrimSpace(string(out)))
			}
		})
	}
	// Verification stays on unless asked: the mismatched name is refused without --insecure.
	if code, line := runBinary(t, bin, "http", mismatched.URL+"/health"); code != 1 || !strings.Contains(line, "certificate") {
		t.Errorf("without --insecure: exit %d %q, want 1 and the certificate named", code, line)
	}
	if code, line := runBinary(t, bin, "http", "-k", mismatched.URL+"/health"); code != 0 {
		t.Errorf("with -k (curl's spelling): exit %d %q, want 0", code, line)
	}
}
